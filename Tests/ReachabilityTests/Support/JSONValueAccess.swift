import Reachability

/// Reading into a `JSONValue` (the library only builds and writes them): what tests check
/// rendered answers with.
extension JSONValue {
    /// The member named `key` of an object (the first, if repeated); nil for other values.
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    /// The element at `index` of an array; nil when out of range or not an array.
    subscript(index: Int) -> JSONValue? {
        guard case .array(let values) = self, values.indices.contains(index) else { return nil }
        return values[index]
    }

    /// The keys of an object in order; nil for other values.
    var keys: [String]? {
        guard case .object(let members) = self else { return nil }
        return members.map(\.0)
    }

    var arrayValue: [JSONValue]? {
        if case .array(let values) = self { return values }
        return nil
    }

    /// An array of strings as Swift strings; nil if this is not an array or any element is not a string.
    var stringArrayValue: [String]? {
        guard case .array(let values) = self else { return nil }
        var result: [String] = []
        result.reserveCapacity(values.count)
        for value in values {
            guard case .string(let string) = value else { return nil }
            result.append(string)
        }
        return result
    }
}
