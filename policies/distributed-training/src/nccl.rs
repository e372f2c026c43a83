//! Which `NCCL_*` variables the ranks of one collective must agree on: the
//! one place the rule classifies NCCL's environment.
//!
//! Source: NCCL's user guide, "Environment Variables" and "Logging"
//! (`docs/userguide/source/env.rst` and `troubleshooting/logging.rst` in
//! NVIDIA/nccl, NCCL 2.30). Almost every variable there chooses the network
//! and interfaces (`NCCL_SOCKET_IFNAME`, `NCCL_NET*`, `NCCL_IB_HCA`), the
//! transports (`NCCL_P2P_*`, `NCCL_SHM_DISABLE`, `NCCL_IB_DISABLE`), the
//! topology (`NCCL_TOPO_FILE`, `NCCL_CROSS_NIC`), the algorithm and protocol
//! (`NCCL_ALGO`, `NCCL_PROTO`, `NCCL_TUNER_PLUGIN`) or the buffers and
//! channels (`NCCL_BUFFSIZE`, `NCCL_MAX_CTAS`): ranks that disagree on the
//! network, transport, topology, algorithm or protocol fail to connect or
//! hang, and for the rest the documentation nowhere says ranks may differ.
//! The variables below only change what one process logs, dumps or
//! reports, how long it waits before it reports an error, or how it runs
//! its own threads and calls: ranks may set them differently.
//!
//! The list names what may differ, so any other `NCCL_*` variable, a
//! future one included, must agree. That default is the safer one for the
//! person submitting: a variable wrongly held to agreement costs one edit
//! (the message names it), while a transport variable wrongly let differ
//! costs a job that hangs with all its GPUs held until a watchdog kills it.
//! NCCL's logging variables share the `NCCL_DEBUG` prefix, so new ones are
//! covered already.

/// `NCCL_*` variables (an entry ending in `*` is a prefix) that affect only
/// the process that reads them, in the README's order.
pub const MAY_DIFFER: [&str; 16] = [
    // Logging: level, subsystems, file, timestamps.
    "NCCL_DEBUG",
    "NCCL_DEBUG_*",
    // Diagnostics: the detected topology written to a file, thread names
    // for debuggers, a profiler (which only observes), the RAS subsystem
    // (which reports a job's health and carries no collective traffic).
    "NCCL_TOPO_DUMP_FILE",
    "NCCL_SET_THREAD_NAME",
    "NCCL_PROFILER_PLUGIN",
    "NCCL_RAS_*",
    // How long this process waits and retries before it reports an error:
    // InfiniBand's local ACK timeout and retry count, set per queue pair;
    // socket connection retries and bootstrap polling.
    "NCCL_IB_TIMEOUT",
    "NCCL_IB_RETRY_CNT",
    "NCCL_SOCKET_RETRY_CNT",
    "NCCL_SOCKET_RETRY_SLEEP_MSEC",
    "NCCL_SOCKET_POLL_TIMEOUT_MSEC",
    // This process's thread affinity, kernel stack size, blocking calls and
    // argument checks.
    "NCCL_IGNORE_CPU_AFFINITY",
    "NCCL_SET_STACK_SIZE",
    "NCCL_COMM_BLOCKING",
    "NCCL_CHECKS_DISABLE",
    "NCCL_CHECK_POINTERS",
];

/// Whether every rank of a collective must give `name` (an `NCCL_*`
/// variable) the same value.
pub fn must_agree(name: &str) -> bool {
    !MAY_DIFFER.iter().any(|entry| match entry.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == *entry,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logging_and_local_waits_may_differ() {
        for name in [
            "NCCL_DEBUG",
            "NCCL_DEBUG_SUBSYS",
            "NCCL_DEBUG_FILE",
            "NCCL_DEBUG_TIMESTAMP_FORMAT",
            "NCCL_DEBUG_TIMESTAMP_LEVELS",
            "NCCL_TOPO_DUMP_FILE",
            "NCCL_RAS_ADDR",
            "NCCL_IB_TIMEOUT",
            "NCCL_SOCKET_RETRY_CNT",
        ] {
            assert!(!must_agree(name), "{name}");
        }
    }

    #[test]
    fn transport_topology_and_protocol_must_agree() {
        for name in [
            "NCCL_SOCKET_IFNAME",
            "NCCL_IB_HCA",
            "NCCL_IB_GID_INDEX",
            "NCCL_IB_DISABLE",
            "NCCL_NET",
            "NCCL_NET_PLUGIN",
            "NCCL_NET_GDR_LEVEL",
            "NCCL_P2P_LEVEL",
            "NCCL_SHM_DISABLE",
            "NCCL_CROSS_NIC",
            "NCCL_TOPO_FILE",
            "NCCL_ALGO",
            "NCCL_PROTO",
            "NCCL_TUNER_PLUGIN",
            "NCCL_BUFFSIZE",
            "NCCL_CONF_FILE",
            "NCCL_CHECK_MODE",
        ] {
            assert!(must_agree(name), "{name}");
        }
    }

    #[test]
    fn unknown_variables_must_agree() {
        assert!(must_agree("NCCL_SOMETHING_NEW"));
        // A prefix entry covers its family, not every name that starts alike.
        assert!(must_agree("NCCL_DEBUGGER"));
        assert!(!must_agree("NCCL_DEBUG_NEW_KNOB"));
    }
}
