/// One record read from /dev/rfkill: `struct rfkill_event` of linux/rfkill.h, in host byte order:
///
///     __u32 idx;   the switch: /sys/class/rfkill/rfkill<idx>
///     __u8  type;  RFKILL_TYPE_WLAN 1, RFKILL_TYPE_WWAN 5, bluetooth, GPS, NFC...
///     __u8  op;    RFKILL_OP_ADD 0, RFKILL_OP_DEL 1, RFKILL_OP_CHANGE 2 (CHANGE_ALL 3 is written, never read)
///     __u8  soft;  1: switched off by software
///     __u8  hard;  1: switched off by a hardware switch
///
/// 8 bytes (RFKILL_EVENT_SIZE_V1). The kernel hands one record per read(2); newer kernels add
/// fields after these (`hard_block_reasons`) for readers that ask for them, and a reader that
/// does not is still sent the first 8. So a record is decoded from its first 8 bytes and
/// whatever follows is skipped; a shorter one, or a field with a value the kernel never sends,
/// is refused rather than guessed at.
package struct RfkillEvent: Hashable, Sendable {
    package enum Operation: UInt8, Sendable {
        case add = 0
        case remove = 1
        case change = 2
    }

    package var index: UInt32
    package var type: UInt8
    package var operation: Operation
    package var block: RadioBlock

    /// RFKILL_EVENT_SIZE_V1.
    package static let sizeV1 = 8
    package static let typeWLAN: UInt8 = 1
    package static let typeWWAN: UInt8 = 5

    package init(index: UInt32, type: UInt8, operation: Operation, block: RadioBlock) {
        self.index = index
        self.type = type
        self.operation = operation
        self.block = block
    }

    /// Decodes the record one read returned; nil when it is not a valid one.
    package init?(record: UnsafeRawBufferPointer) {
        let reader = ByteReader(record)
        guard reader.count >= Self.sizeV1, let index = reader.integer(at: 0, as: UInt32.self),
            let type = reader.integer(at: 4, as: UInt8.self),
            let operation = reader.integer(at: 5, as: UInt8.self).flatMap(Operation.init(rawValue:)),
            let soft = reader.integer(at: 6, as: UInt8.self), let hard = reader.integer(at: 7, as: UInt8.self),
            soft <= 1, hard <= 1
        else { return nil }
        var block: RadioBlock = []
        if soft == 1 { block.insert(.soft) }
        if hard == 1 { block.insert(.hard) }
        self.init(index: index, type: type, operation: operation, block: block)
    }

    /// A Wi-Fi or cellular radio: the only switches that can take a network link off.
    package var isNetworkRadio: Bool { type == Self.typeWLAN || type == Self.typeWWAN }
}
