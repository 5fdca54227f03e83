//! `latscope serve --print-config KIND`: the files around a running `serve` — a
//! Prometheus scrape config (latscope's own `/metrics`, and `/probe` the way
//! blackbox_exporter is scraped), alerting rules, a systemd unit.

/// What `--print-config` can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrintConfig {
    /// A Prometheus scrape config for `/metrics` and `/probe`.
    Prometheus,
    /// Prometheus alerting rules: a target failing, a finding that holds, the cache
    /// that stopped hitting, a certificate about to expire.
    Rules,
    /// A systemd unit that runs `latscope serve`.
    Systemd,
}

/// The file `kind` asks for; `listen` is where serve listens, `config` its targets
/// file.
pub fn render(kind: PrintConfig, listen: &str, config: Option<&str>) -> String {
    match kind {
        PrintConfig::Prometheus => format!(
            r#"# Prometheus scrape config for latscope serve (listening on {listen}).
scrape_configs:
  # latscope's own metrics: every scheduled target's phases, findings and changes.
  - job_name: latscope
    scrape_interval: 30s
    static_configs:
      - targets: ["{listen}"]
  # /probe answers as blackbox_exporter does: list the URLs to probe here.
  - job_name: latscope_probe
    metrics_path: /probe
    params:
      module: [http_2xx]
    static_configs:
      - targets: ["https://example.org/"]
    relabel_configs:
      - source_labels: [__address__]
        target_label: __param_target
      - source_labels: [__param_target]
        target_label: instance
      - target_label: __address__
        replacement: "{listen}"
"#
        ),
        PrintConfig::Rules => RULES.to_string(),
        PrintConfig::Systemd => format!(
            r#"# /etc/systemd/system/latscope.service
[Unit]
Description=latscope serve: where a web service's latency goes, kept watching
After=network-online.target
Wants=network-online.target

[Service]
ExecStart=/usr/local/bin/latscope serve --listen {listen}{config}
ExecReload=/bin/kill -HUP $MAINPID
Restart=on-failure
DynamicUser=yes
StateDirectory=latscope
Environment=LATSCOPE_DB=/var/lib/latscope/runs.db
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=yes

[Install]
WantedBy=multi-user.target
"#,
            config = config.map(|c| format!(" --config {c}")).unwrap_or_default()
        ),
    }
}

/// The alerting rules (tested with `promtool test rules` in tests/serve.rs).
pub const RULES: &str = r#"groups:
  - name: latscope
    rules:
      - alert: LatscopeTargetFailing
        expr: latscope_failing == 1
        for: 2m
        labels:
          severity: critical
        annotations:
          summary: "{{ $labels.target }} fails: no answer, or a status other than 2xx/3xx"
      - alert: LatscopeFindingHolds
        expr: latscope_finding{severity=~"warn|crit"} == 1
        for: 15m
        labels:
          severity: warning
        annotations:
          summary: "{{ $labels.target }}: {{ $labels.id }} ({{ $labels.severity }}) for 15 minutes"
      - alert: LatscopeCacheStoppedHitting
        expr: |
          max_over_time(latscope_cache_status{status="hit"}[1h] offset 1h) == 1
          unless on(target) latscope_cache_status{status="hit"} == 1
        for: 10m
        labels:
          severity: warning
        annotations:
          summary: "the cache in front of {{ $labels.target }} stopped answering hits"
      - alert: LatscopeCertificateExpiresSoon
        expr: latscope_cert_expiry_timestamp_seconds - time() < 14 * 86400
        for: 1h
        labels:
          severity: warning
        annotations:
          summary: "a certificate of {{ $labels.target }} expires within 14 days"
"#;
