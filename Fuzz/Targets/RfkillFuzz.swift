// libFuzzer target: records as read(2) returns them from /dev/rfkill (`RfkillEvent`), and the
// radio follower applying what decoded. The input is a run of chunks, each a length byte (mod
// 24: version 1's 8 bytes, shorter, and the longer records of newer kernels) and that many bytes.
//
// Oracles besides "no crash": a record decodes exactly when it has 8 bytes or more with an
// operation the kernel sends (0-2) and soft/hard of 0 or 1, into the fields its bytes hold; the
// follower, which has seen no link, hands no fact for any of them.
@testable import Reachability

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRfkill(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let raw = UnsafeRawBufferPointer(start: data, count: size)
    var events: [RfkillEvent] = []
    var offset = 0
    while offset < size {
        let length = min(Int(raw[offset]) % 24, size - offset - 1)
        let record = UnsafeRawBufferPointer(rebasing: raw[(offset + 1)..<(offset + 1 + length)])
        let valid = length >= RfkillEvent.sizeV1 && record[5] <= 2 && record[6] <= 1 && record[7] <= 1
        let event = RfkillEvent(record: record)
        require((event != nil) == valid, "record \(Array(record)) decoded to \(String(describing: event))")
        if let event {
            let index = record.loadUnaligned(fromByteOffset: 0, as: UInt32.self)
            require(event.index == index && event.type == record[4] && event.operation.rawValue == record[5], "fields of \(Array(record))")
            require(event.block.contains(.soft) == (record[6] == 1) && event.block.contains(.hard) == (record[7] == 1), "block")
            events.append(event)
        }
        offset += 1 + length
    }
    let follower = RadioFollower(sysfs: SysfsReader(root: "/nonexistent-reachd-fuzz"), devicePath: nil)
    require(follower.apply(events).isEmpty, "facts for links the follower never saw")
    return 0
}
