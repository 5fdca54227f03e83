//! latscope's integration tests: one binary (it links once), one module per area.
//! Every test uses real sockets on 127.0.0.1 or on a lab wire inside a network
//! namespace the test made itself.

mod caches;
mod caches_findings;
mod capacity;
mod compare;
mod compare_real;
mod diagnose;
mod disk;
mod disk_errors;
mod findings;
mod findings_disk;
mod findings_dns;
mod findings_proxy;
mod findings_real;
mod findings_wire;
mod hostile_exit;
mod hostile_load;
mod hostile_store;
mod lab;
mod lab_options;
mod lab_routes;
mod load;
mod probe;
mod probe_tls;
mod probe_verdicts;
mod report;
mod store;
mod util;
mod util_caches;
mod util_disk;
mod util_hostile;
mod util_lab;
mod util_nginx;
mod util_real;
mod util_wire;
mod wire;
mod wire_command;
mod wire_private;
