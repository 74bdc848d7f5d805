/// `text` as one shell word: as it is when it needs no quoting, else in single quotes. For the
/// commands a program prints as the next step, so that pasting them works.
public func shellQuoted(_ text: String) -> String {
    let plain =
        !text.isEmpty
        && text.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                || "/._-+:=@%,".unicodeScalars.contains($0)
        }
    return plain ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
}
