import CQRencode

/// QR codes for the terminal, encoded by libqrencode and drawn with Unicode half blocks (two
/// module rows per text line), with the 4-module quiet zone scanners need.
///
/// Light modules are drawn as blocks and dark ones as blanks, so the code reads correctly on the
/// usual dark terminal background (phone scanners also read the inverse on light ones).
public enum TerminalQR {
    /// The module matrix of `text` (true = dark), or nil when it cannot be encoded.
    public static func modules(for text: String) -> [[Bool]]? {
        guard let code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else { return nil }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        guard width > 0, let data = code.pointee.data else { return nil }
        return (0..<width).map { row in (0..<width).map { column in data[row * width + column] & 1 == 1 } }
    }

    /// The text lines to print, or nil when `text` cannot be encoded.
    public static func render(_ text: String, quietZone: Int = 4) -> [String]? {
        guard let matrix = modules(for: text) else { return nil }
        let size = matrix.count + 2 * quietZone
        func isLight(_ row: Int, _ column: Int) -> Bool {
            let r = row - quietZone
            let c = column - quietZone
            guard r >= 0, c >= 0, r < matrix.count, c < matrix.count else { return true }
            return !matrix[r][c]
        }
        var lines: [String] = []
        for top in stride(from: 0, to: size, by: 2) {
            var line = ""
            for column in 0..<size {
                let upper = isLight(top, column)
                let lower = top + 1 < size ? isLight(top + 1, column) : false
                switch (upper, lower) {
                case (true, true): line += "█"
                case (true, false): line += "▀"
                case (false, true): line += "▄"
                case (false, false): line += " "
                }
            }
            lines.append(line)
        }
        return lines
    }
}
