import Foundation

/// `eleven-bench net`: not written yet.
func runNetBench(_ arguments: [String]) -> Int32 {
    FileHandle.standardError.write(Data("eleven-bench: this benchmark is not written yet\n".utf8))
    return 1
}
