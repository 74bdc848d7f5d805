import Mailbox

/// Renders the relay's counters in the Prometheus text exposition format (version 0.0.4), for
/// the glue's `/metrics`. Label values come from fixed sets (error codes, mood and result
/// words), never from client data.
public enum MetricsExposition {
    public static func render(
        metrics: RelayMetrics, gauges: RelayGauges, storage: SQLiteRelayStorage.Statistics? = nil
    ) -> String {
        var out = ""
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        func sample(_ name: String, _ value: Int, _ labels: String = "") {
            out += labels.isEmpty ? "\(name) \(value)\n" : "\(name){\(labels)} \(value)\n"
        }
        let counters: [(String, String, Int)] = [
            ("connections_opened_total", "WebSocket connections opened.", metrics.connectionsOpened),
            (
                "connections_rejected_total", "Connections turned away by a limit.",
                metrics.connectionsRejected
            ),
            ("frames_received_total", "Client frames received.", metrics.framesReceived),
            ("nameplates_allocated_total", "Nameplates allocated.", metrics.nameplatesAllocated),
            ("nameplates_claimed_total", "Successful claims.", metrics.nameplatesClaimed),
            ("mailboxes_opened_total", "Successful opens.", metrics.mailboxesOpened),
            ("messages_added_total", "Messages stored.", metrics.messagesAdded),
            ("message_body_bytes_total", "Bytes of message bodies stored.", metrics.messageBodyBytesAdded),
        ]
        for (name, help, value) in counters {
            family("eleven_relay_\(name)", "counter", help)
            sample("eleven_relay_\(name)", value)
        }
        family("eleven_relay_errors_total", "counter", "Error replies and refusals, by reason.")
        for code in RelayError.relayCodes {
            sample(
                "eleven_relay_errors_total", metrics.errors[code, default: 0], "reason=\"\(code.rawValue)\"")
        }
        family("eleven_relay_close_moods_total", "counter", "Moods reported when closing a mailbox.")
        for mood in ["happy", "lonely", "scary", "errory", "unwelcome", "other", "none"] {
            sample("eleven_relay_close_moods_total", metrics.closeMoods[mood, default: 0], "mood=\"\(mood)\"")
        }
        family("eleven_relay_mailbox_results_total", "counter", "How retired mailboxes ended.")
        for result in ["happy", "lonely", "quiet", "scary", "errory", "pruney", "crowded"] {
            sample(
                "eleven_relay_mailbox_results_total", metrics.mailboxResults[result, default: 0],
                "result=\"\(result)\"")
        }
        family("eleven_relay_nameplate_results_total", "counter", "How retired nameplates ended.")
        for result in ["happy", "lonely", "pruney", "crowded"] {
            sample(
                "eleven_relay_nameplate_results_total", metrics.nameplateResults[result, default: 0],
                "result=\"\(result)\"")
        }
        let current: [(String, String, Int)] = [
            ("connections", "Open connections.", gauges.connections),
            ("subscribed_connections", "Connections subscribed to a mailbox.", gauges.subscribedConnections),
            ("nameplates", "Live nameplates.", gauges.nameplates),
            ("mailboxes", "Live mailboxes.", gauges.mailboxes),
            ("messages", "Messages waiting in mailboxes.", gauges.messages),
            (
                "nameplates_resting", "Short nameplates deleted too recently to be allocated again.",
                gauges.restingNameplates
            ),
        ]
        for (name, help, value) in current {
            family("eleven_relay_\(name)", "gauge", help)
            sample("eleven_relay_\(name)", value)
        }
        if let storage {
            let stored: [(String, String, Int)] = [
                ("storage_transactions_total", "Storage transactions committed.", storage.transactions),
                ("storage_batches_total", "Event write batches committed (group commit).", storage.batches),
                ("storage_writes_total", "State changes committed.", storage.writes),
            ]
            for (name, help, value) in stored {
                family("eleven_relay_\(name)", "counter", help)
                sample("eleven_relay_\(name)", value)
            }
        }
        return out
    }
}
