extension MetricsExposition {
    /// The outage counters: time lost by cause, outages by cause, time nobody watched. Every
    /// series exists from the start (at 0), and every label comes from a closed set (causes,
    /// kinds, reasons): 9 + 2 + 40 + 9 + 2 series, whatever the network does.
    package static func renderOutage(_ totals: OutageTotals, into out: inout ExpositionText) {
        out.family("reachd_offline_seconds_total", .counter, "Seconds the host was not online, by the first broken layer of its answer (reachctl why); time asleep or with reachd stopped is not counted here.")
        for cause in OutageCause.allCases {
            out.sample("reachd_offline_seconds_total", [("cause", cause.rawValue)], totals.offline[cause] ?? 0)
        }
        out.family("reachd_degraded_seconds_total", .counter, "Seconds the host was online but degraded: its traffic stalled (traffic), or the probe met a captive portal, limited connectivity or no internet (portal).")
        for cause in OutageCause.degradations {
            out.sample("reachd_degraded_seconds_total", [("cause", cause.rawValue)], totals.degraded[cause] ?? 0)
        }
        out.family("reachd_uplink_down_seconds_total", .counter, "Seconds uplinks (links that once carried a default route) carried none, by their kind and the first broken layer, summed over the uplinks of a kind.")
        for kind in InterfaceKind.allCases {
            for cause in OutageCause.uplinkCauses {
                out.sample(
                    "reachd_uplink_down_seconds_total", [("kind", kind.rawValue), ("cause", cause.rawValue)],
                    totals.uplinkDown[.init(kind: kind, cause: cause)] ?? 0)
            }
        }
        out.family("reachd_outages_total", .counter, "Times the host went from online to not online, by the first broken layer when it did.")
        for cause in OutageCause.allCases {
            out.sample("reachd_outages_total", [("cause", cause.rawValue)], Double(totals.outages[cause] ?? 0))
        }
        out.family("reachd_unobserved_seconds_total", .counter, "Seconds reachd could not watch: the host was asleep (asleep), or reachd was not running (stopped, from the state file's last write to the next start).")
        for reason in UnobservedReason.allCases {
            out.sample("reachd_unobserved_seconds_total", [("reason", reason.rawValue)], totals.unobserved[reason] ?? 0)
        }
    }
}
