import Foundation

extension TestSupport {
    /// Polls `condition` every 20 ms until it holds or `timeout` seconds pass; its last answer.
    public static func eventually(timeout: Double = 10, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }
}
