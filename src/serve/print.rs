//! `latscope serve --print-config KIND`: the files around a running `serve` — a
//! Prometheus scrape config (latscope's own `/metrics`, and `/probe` the way
//! blackbox_exporter is scraped), alerting rules, a Grafana dashboard, a systemd unit,
//! Kubernetes manifests (a ConfigMap with the targets file, a Deployment, a Service).

use serde_json::{json, Value};

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
    /// A Grafana dashboard (JSON, for a Prometheus data source).
    Grafana,
    /// Kubernetes manifests: the targets file as a ConfigMap, a Deployment, a Service.
    K8s,
}

/// The file `kind` asks for; `listen` is where serve listens, `config` its targets
/// file and `targets` that file's text (for the Kubernetes ConfigMap).
pub fn render(
    kind: PrintConfig,
    listen: &str,
    config: Option<&str>,
    targets: Option<&str>,
    secret: bool,
) -> String {
    match kind {
        PrintConfig::Grafana => {
            serde_json::to_string_pretty(&dashboard()).unwrap_or_default() + "\n"
        }
        PrintConfig::K8s => {
            let mut out = String::new();
            for d in manifests(listen, targets.unwrap_or(SAMPLE_TARGETS), secret) {
                out.push_str("---\n");
                out.push_str(&serde_json::to_string_pretty(&d).unwrap_or_default());
                out.push('\n');
            }
            out
        }
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

/// The targets file the Kubernetes ConfigMap holds when `--config` gives none.
const SAMPLE_TARGETS: &str = "# latscope serve's targets (docs/serve.md)\n[[target]]\nurl = \"https://example.org/\"\nname = \"example\"\ninterval = \"60s\"\n";

/// The Kubernetes manifests: the targets file as a ConfigMap (a Secret when it holds
/// secret headers), one replica of serve (non-root, read-only root filesystem,
/// resources set, probes on `/-/healthy`) and a Service for Prometheus, annotated
/// for scraping.
pub fn manifests(listen: &str, targets: &str, secret: bool) -> Vec<Value> {
    let port: u16 = listen
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or(9316);
    let labels =
        json!({"app.kubernetes.io/name": "latscope", "app.kubernetes.io/component": "serve"});
    let probe = json!({"httpGet": {"path": "/-/healthy", "port": "http"}, "periodSeconds": 10});
    vec![
        if secret {
            json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "Opaque",
                "metadata": {"name": "latscope-targets", "labels": labels},
                "stringData": {"targets.toml": targets},
            })
        } else {
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "latscope-targets", "labels": labels},
                "data": {"targets.toml": targets},
            })
        },
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "latscope", "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [{
                            "name": "latscope",
                            "image": "latscope:latest",
                            "args": ["serve", "--listen", format!("0.0.0.0:{port}"), "--config", "/etc/latscope/targets.toml", "--db", "/var/lib/latscope/runs.db"],
                            "ports": [{"name": "http", "containerPort": port}],
                            "readinessProbe": probe,
                            "livenessProbe": probe,
                            "resources": {
                                "requests": {"cpu": "100m", "memory": "64Mi"},
                                "limits": {"cpu": "1", "memory": "256Mi"},
                            },
                            "securityContext": {
                                "allowPrivilegeEscalation": false,
                                "readOnlyRootFilesystem": true,
                                "runAsNonRoot": true,
                                "runAsUser": 65534,
                            },
                            "volumeMounts": [
                                {"name": "targets", "mountPath": "/etc/latscope", "readOnly": true},
                                {"name": "data", "mountPath": "/var/lib/latscope"},
                            ],
                        }],
                        "volumes": [
                            if secret {
                                json!({"name": "targets", "secret": {"secretName": "latscope-targets"}})
                            } else {
                                json!({"name": "targets", "configMap": {"name": "latscope-targets"}})
                            },
                            {"name": "data", "emptyDir": {}},
                        ],
                    },
                },
            },
        }),
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "latscope",
                "labels": labels,
                "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": port.to_string()},
            },
            "spec": {
                "selector": labels,
                "ports": [{"name": "http", "port": port, "targetPort": "http"}],
            },
        }),
    ]
}

/// The Grafana dashboard: success, where the fresh TTFB goes phase by phase, fresh
/// against reused and resumed, the server's time, the active findings, the changes,
/// the certificates' expiry; one `target` variable.
pub fn dashboard() -> Value {
    let ds = json!({"type": "prometheus", "uid": "${DS_PROMETHEUS}"});
    let mut id = 0;
    let mut panel = |title: &str,
                     kind: &str,
                     x: u32,
                     y: u32,
                     w: u32,
                     h: u32,
                     exprs: &[(&str, &str)],
                     extra: Value| {
        id += 1;
        let targets: Vec<Value> = exprs
            .iter()
            .enumerate()
            .map(|(i, (expr, legend))| {
                json!({"refId": ((b'A' + i as u8) as char).to_string(), "datasource": ds, "expr": expr, "legendFormat": legend})
            })
            .collect();
        let mut p = json!({
            "id": id,
            "title": title,
            "type": kind,
            "datasource": ds,
            "gridPos": {"x": x, "y": y, "w": w, "h": h},
            "targets": targets,
        });
        if let (Some(p), Some(e)) = (p.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                p.insert(k.clone(), v.clone());
            }
        }
        p
    };
    let panels = vec![
        panel("Up", "stat", 0, 0, 6, 6, &[("latscope_probe_success{target=~\"$target\"}", "{{target}}")],
            json!({"fieldConfig": {"defaults": {"mappings": [{"type": "value", "options": {"0": {"text": "failing"}, "1": {"text": "up"}}}]}, "overrides": []}})),
        panel("Where a fresh request's time goes", "timeseries", 6, 0, 18, 8,
            &[("latscope_phase_seconds{target=~\"$target\",series=\"fresh\",phase=~\"dns|connect|tls|send|wait|receive\"}", "{{target}} {{phase}}")],
            json!({"fieldConfig": {"defaults": {"unit": "s", "custom": {"stacking": {"mode": "normal"}, "fillOpacity": 30}}, "overrides": []}})),
        panel("TTFB: fresh, resumed, reused connections", "timeseries", 0, 8, 12, 8,
            &[("latscope_phase_seconds{target=~\"$target\",phase=\"ttfb\"}", "{{target}} {{series}}")],
            json!({"fieldConfig": {"defaults": {"unit": "s"}, "overrides": []}})),
        panel("Server time", "timeseries", 12, 8, 12, 8,
            &[("latscope_server_time_seconds{target=~\"$target\"}", "{{target}}")],
            json!({"fieldConfig": {"defaults": {"unit": "s"}, "overrides": []}})),
        panel("Active findings", "table", 0, 16, 12, 8,
            &[("latscope_finding{target=~\"$target\"} == 1", "")],
            json!({"options": {"showHeader": true}, "transformations": [{"id": "labelsToFields", "options": {}}]})),
        panel("Changes in the last day", "table", 12, 16, 12, 8,
            &[("increase(latscope_change_total{target=~\"$target\"}[1d]) > 0", "")],
            json!({"options": {"showHeader": true}, "transformations": [{"id": "labelsToFields", "options": {}}]})),
        panel("Certificate expires in", "stat", 0, 24, 12, 6,
            &[("latscope_cert_expiry_timestamp_seconds{target=~\"$target\"} - time()", "{{target}}")],
            json!({"fieldConfig": {"defaults": {"unit": "s"}, "overrides": []}})),
        panel("Handshake round trips", "stat", 12, 24, 12, 6,
            &[("latscope_handshake_round_trips{target=~\"$target\"}", "{{target}}")],
            json!({})),
    ];
    json!({
        "__inputs": [{"name": "DS_PROMETHEUS", "label": "Prometheus", "type": "datasource", "pluginId": "prometheus", "pluginName": "Prometheus"}],
        "title": "latscope serve",
        "uid": "latscope-serve",
        "tags": ["latscope"],
        "timezone": "browser",
        "schemaVersion": 39,
        "version": 1,
        "refresh": "30s",
        "time": {"from": "now-24h", "to": "now"},
        "templating": {"list": [{
            "name": "target",
            "label": "target",
            "type": "query",
            "datasource": ds,
            "query": "label_values(latscope_checks_total, target)",
            "includeAll": true,
            "multi": true,
            "allValue": ".*",
            "current": {"text": "All", "value": "$__all"},
            "refresh": 2,
        }]},
        "panels": panels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every panel queries latscope's own series, each id is its own, and the
    /// manifests name the port `--listen` gives.
    #[test]
    fn the_dashboard_and_manifests_hold_together() {
        let d = dashboard();
        let panels = d["panels"].as_array().unwrap();
        let mut ids: Vec<i64> = panels.iter().map(|p| p["id"].as_i64().unwrap()).collect();
        ids.dedup();
        assert_eq!(ids.len(), panels.len());
        for p in panels {
            for t in p["targets"].as_array().unwrap() {
                assert!(t["expr"].as_str().unwrap().contains("latscope_"), "{p}");
            }
        }
        let m = manifests("127.0.0.1:9400", "x = 1\n", false);
        assert_eq!(
            m[1]["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"],
            9400
        );
        assert_eq!(m[0]["data"]["targets.toml"], "x = 1\n");
        let m = manifests("127.0.0.1:9400", "x = 1\n", true);
        assert_eq!(m[0]["kind"], "Secret");
        assert_eq!(
            m[1]["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"],
            "latscope-targets"
        );
    }
}
