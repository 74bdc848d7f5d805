import Testing

@testable import ElevenCLI

@Suite struct TerminalQRTests {
    /// Reading the half blocks back gives exactly libqrencode's modules inside a light quiet zone.
    @Test(arguments: [
        "https://127.0.0.1/invite#Paul/coral-piano-42",
        "https://family.example/invite#S%C3%A9verine/4Fq1Lk8YvT3mZ9cXp2RwBn",
        "x",
    ])
    func renderingRoundTrips(text: String) throws {
        let matrix = try #require(TerminalQR.modules(for: text))
        #expect(matrix.count >= 21 && (matrix.count - 17) % 4 == 0)  // QR versions are 17 + 4v wide
        let lines = try #require(TerminalQR.render(text, quietZone: 4))
        let size = matrix.count + 8
        #expect(lines.count == (size + 1) / 2)
        var light: [[Bool]] = Array(repeating: [], count: lines.count * 2)
        for (i, line) in lines.enumerated() {
            #expect(line.count == size)
            for ch in line {
                let (upper, lower): (Bool, Bool) =
                    switch ch {
                    case "█": (true, true)
                    case "▀": (true, false)
                    case "▄": (false, true)
                    default: (false, false)
                    }
                light[2 * i].append(upper)
                light[2 * i + 1].append(lower)
            }
        }
        for row in 0..<size {
            for column in 0..<size {
                let r = row - 4
                let c = column - 4
                let inside = r >= 0 && c >= 0 && r < matrix.count && c < matrix.count
                #expect(light[row][column] == (inside ? !matrix[r][c] : true))
            }
        }
    }

    @Test func differentTextsGiveDifferentCodes() throws {
        let a = try #require(TerminalQR.modules(for: "https://h/invite#Paul/coral-piano-42"))
        let b = try #require(TerminalQR.modules(for: "https://h/invite#Paul/coral-piano-43"))
        #expect(a != b)
    }
}
