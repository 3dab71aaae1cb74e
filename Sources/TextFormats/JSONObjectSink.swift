/// Where the members of one JSON object go, in order: into a ``JSONValue`` (``JSONObjectBuilder``)
/// or straight into bytes (``JSONObjectWriter``). A record whose fields are listed once, against
/// this protocol, has both forms and they cannot disagree: the proxy writes its log line through
/// the writer (one line per connection: building a `JSONValue` tree first cost a quarter of the
/// proxy's instructions per request), and tests and `status` read the value.
///
/// Keys are ASCII names that need no escaping (the log contract's field names, LogRecord's field
/// enums' raw values): they are written as they are.
public protocol JSONObjectSink {
    /// Any value; `nil` is `null`.
    mutating func add(_ key: String, _ value: JSONValue?)
    /// A string; `nil` is `null`.
    mutating func add(_ key: String, string: String?)
    mutating func add(_ key: String, int: Int64)
    mutating func add(_ key: String, bool: Bool)
    /// An array of strings.
    mutating func add(_ key: String, strings: [String])
    /// A value that was serialized already (`bytes` is `value.serializedBytes`), so the writer can
    /// copy it rather than write it again; `value` is only built by a sink that keeps values.
    mutating func add(_ key: String, value: @autoclosure () -> JSONValue, serializedAs bytes: [UInt8])
    /// A nested object; `nil` is `null`.
    mutating func add(_ key: String, object: (some JSONObjectWritable)?)
}

/// A value whose JSON form is an object, its members listed once for every sink.
public protocol JSONObjectWritable {
    func writeMembers(to sink: inout some JSONObjectSink)
}

extension JSONObjectWritable {
    public var json: JSONValue {
        var builder = JSONObjectBuilder()
        writeMembers(to: &builder)
        return builder.value
    }
}

/// Collects an object's members into a ``JSONValue``.
public struct JSONObjectBuilder: JSONObjectSink {
    public private(set) var fields: [(String, JSONValue)] = []

    public init() {}

    public var value: JSONValue { .object(fields) }

    public mutating func add(_ key: String, _ value: JSONValue?) { fields.append((key, value ?? .null)) }
    public mutating func add(_ key: String, string: String?) { add(key, string.map(JSONValue.string)) }
    public mutating func add(_ key: String, int: Int64) { add(key, .int(int)) }
    public mutating func add(_ key: String, bool: Bool) { add(key, .bool(bool)) }
    public mutating func add(_ key: String, strings: [String]) { add(key, .strings(strings)) }
    public mutating func add(_ key: String, value: @autoclosure () -> JSONValue, serializedAs bytes: [UInt8]) {
        add(key, value())
    }
    public mutating func add(_ key: String, object: (some JSONObjectWritable)?) { add(key, object?.json) }
}

/// Writes an object's members as compact JSON bytes, the same bytes as `JSONValue.serializedBytes`
/// of what ``JSONObjectBuilder`` would collect, without the tree in between.
///
/// Inlinable, so that other modules get it specialised for their own member types: called through
/// generic witnesses, the nested objects cost more than the whole tree did.
public struct JSONObjectWriter: JSONObjectSink {
    @usableFromInline var out: [UInt8]
    @usableFromInline var isEmpty = true

    @inlinable public init(reservingCapacity capacity: Int = 1024) {
        out = []
        out.reserveCapacity(capacity)
        out.append(UInt8(ascii: "{"))
    }

    /// The object, closed.
    @inlinable public consuming func finish() -> [UInt8] {
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// `,"key":` in one append rather than five (each checks the array's capacity and uniqueness):
    /// this runs for every member of every log line.
    @inlinable mutating func key(_ key: String) {
        let comma = !isEmpty
        isEmpty = false
        var key = key
        key.withUTF8 { name in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: name.count + 4) { buffer in
                var end = 0
                if comma {
                    buffer[end] = UInt8(ascii: ",")
                    end += 1
                }
                buffer[end] = UInt8(ascii: "\"")
                end += 1
                _ = UnsafeMutableBufferPointer(rebasing: buffer[end..<(end + name.count)]).initialize(from: name)
                end += name.count
                buffer[end] = UInt8(ascii: "\"")
                buffer[end + 1] = UInt8(ascii: ":")
                end += 2
                out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<end]))
            }
        }
    }

    @inlinable public mutating func add(_ key: String, _ value: JSONValue?) {
        self.key(key)
        if let value { value.writeCompact(to: &out) } else { JSONValue.writeNull(to: &out) }
    }

    @inlinable public mutating func add(_ key: String, string: String?) {
        self.key(key)
        if let string { JSONValue.writeString(string, to: &out) } else { JSONValue.writeNull(to: &out) }
    }

    @inlinable public mutating func add(_ key: String, int: Int64) {
        self.key(key)
        JSONValue.writeInt(int, to: &out)
    }

    @inlinable public mutating func add(_ key: String, bool: Bool) {
        self.key(key)
        JSONValue.bool(bool).writeCompact(to: &out)
    }

    @inlinable public mutating func add(_ key: String, strings: [String]) {
        self.key(key)
        out.append(UInt8(ascii: "["))
        for (index, string) in strings.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            JSONValue.writeString(string, to: &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    @inlinable public mutating func add(_ key: String, value: @autoclosure () -> JSONValue, serializedAs bytes: [UInt8])
    {
        self.key(key)
        out += bytes
    }

    @inlinable public mutating func add(_ key: String, object: (some JSONObjectWritable)?) {
        self.key(key)
        guard let object else { return JSONValue.writeNull(to: &out) }
        out.append(UInt8(ascii: "{"))
        isEmpty = true
        object.writeMembers(to: &self)
        isEmpty = false
        out.append(UInt8(ascii: "}"))
    }
}
