/// A value bound to or read from SQLite by ``SQLiteDatabase/query(_:_:)``.
public enum SQLValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case text(String)
    case blob([UInt8])

    public var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    public var text: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    public var blob: [UInt8]? {
        if case .blob(let value) = self { return value }
        return nil
    }
}
