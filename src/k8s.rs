//! The manifests of a sharded load on Kubernetes (`latscope k8s job`): a ConfigMap with
//! the scenario file and an Indexed Job whose pods each run `latscope load …
//! --shards N --start-at T` (the index comes from `JOB_COMPLETION_INDEX`) and print
//! their run as an export file on stdout, for `kubectl logs` → `latscope import` →
//! `latscope merge`. Each document is JSON, which is YAML.
//!
//! Secrets never go into the Job's arguments: a `-H` value whose header is secret
//! (named as one, or marked `--redact-header`) and a URL with credentials or token
//! parameters go into a Secret (`NAME-secrets`), each argument replaced by
//! `$(LATSCOPE_SECRET_N)`, which Kubernetes expands from the container's env
//! (`env.valueFrom.secretKeyRef`); a scenario file that holds any is carried in a
//! Secret instead of the ConfigMap.
//!
//! `commands/k8s.rs` checks the flags and the load, and reads the scenario file.

use serde_json::{json, Map, Value};

use crate::redact::{is_secret_header, redact_urls};

/// Where the scenario file is mounted in each pod.
pub const SCENARIO_DIR: &str = "/etc/latscope";
/// The scenario file's name there.
pub const SCENARIO_FILE: &str = "scenario.toml";
/// What each pod runs: the load (its text to stderr, so the log's stdout is the
/// export), then its run as an export file; the load's exit code is the pod's.
const POD_SCRIPT: &str = "latscope load \"$@\" >&2; rc=$?; latscope export last || rc=1; exit $rc";

/// A checked Job: its names, the pods' image and resources, the shards and when they
/// start (RFC 3339).
#[derive(Debug, Clone)]
pub struct Job {
    pub name: String,
    pub namespace: String,
    pub image: String,
    pub cpu: String,
    pub memory: String,
    pub shards: u32,
    pub start_at: String,
}

/// Whether `s` is a DNS-1123 label of at most `max` characters (Kubernetes names).
pub fn dns_label(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// The Secret (when the load carries one), the ConfigMap (when it has a scenario file
/// and the file holds no secret) and the Indexed Job. `load` is the load's arguments
/// as each pod runs them (the scenario file's path already [`SCENARIO_DIR`]'s);
/// `scenario` the file's text.
pub fn manifests(job: &Job, load: &[String], scenario: Option<&str>) -> Vec<Value> {
    let marked = marked_headers(load);
    let secret_name = format!("{}-secrets", job.name);
    let mut secrets = Secrets::default();
    let scenario_secret = scenario.is_some_and(|text| scenario_has_secret(text, &marked));
    if let Some(text) = scenario.filter(|_| scenario_secret) {
        secrets.data.insert(SCENARIO_FILE.into(), json!(text));
    }
    let mut pod_args = secrets.take_from(load, &marked, &secret_name);
    pod_args.extend([
        "--shards".into(),
        job.shards.to_string(),
        "--start-at".into(),
        job.start_at.clone(),
    ]);

    let labels = json!({
        "app.kubernetes.io/name": "latscope",
        "app.kubernetes.io/component": "load-shard",
        "latscope.dev/run": job.name,
    });
    let mut docs = Vec::new();
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    if !secrets.data.is_empty() {
        docs.push(json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": secret_name, "namespace": job.namespace, "labels": labels},
            "stringData": secrets.data,
        }));
    }
    let mount = json!({"name": "scenario", "mountPath": SCENARIO_DIR, "readOnly": true});
    if scenario_secret {
        volumes.push(json!({"name": "scenario", "secret": {
            "secretName": secret_name,
            "items": [{"key": SCENARIO_FILE, "path": SCENARIO_FILE}],
        }}));
        mounts.push(mount);
    } else if let Some(text) = scenario {
        let cm = format!("{}-scenario", job.name);
        docs.push(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": cm, "namespace": job.namespace, "labels": labels},
            "data": {SCENARIO_FILE: text},
        }));
        volumes.push(json!({"name": "scenario", "configMap": {"name": cm}}));
        mounts.push(mount);
    }
    let mut env = vec![
        json!({"name": "LATSCOPE_DB", "value": "/tmp/latscope.db"}),
        json!({"name": "TERM", "value": "dumb"}),
    ];
    env.extend(secrets.env);
    docs.push(indexed_job(job, &labels, pod_args, env, volumes, mounts));
    docs
}

/// The Indexed Job: one pod per shard, spread over nodes, never retried.
fn indexed_job(
    job: &Job,
    labels: &Value,
    args: Vec<String>,
    env: Vec<Value>,
    volumes: Vec<Value>,
    mounts: Vec<Value>,
) -> Value {
    let command = ["/bin/sh", "-c", POD_SCRIPT, "latscope"];
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
            "labels": labels,
            "annotations": {"latscope.dev/start-at": job.start_at},
        },
        "spec": {
            "completionMode": "Indexed",
            "completions": job.shards,
            "parallelism": job.shards,
            // A shard that fails is not run again: a second try would send its
            // share twice.
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": 86400,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "affinity": {"podAntiAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [{
                            "weight": 100,
                            "podAffinityTerm": {
                                "topologyKey": "kubernetes.io/hostname",
                                "labelSelector": {"matchLabels": {"latscope.dev/run": job.name}},
                            },
                        }],
                    }},
                    "containers": [{
                        "name": "latscope",
                        "image": job.image,
                        "command": command,
                        "args": args,
                        "env": env,
                        "resources": {
                            "requests": {"cpu": job.cpu, "memory": job.memory},
                            "limits": {"cpu": job.cpu, "memory": job.memory},
                        },
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "runAsNonRoot": true,
                            "runAsUser": 65534,
                        },
                        "volumeMounts": mounts,
                    }],
                    "volumes": volumes,
                },
            },
        },
    })
}

/// The Secret's values and the env entries that hand them to the pods.
#[derive(Default)]
struct Secrets {
    data: Map<String, Value>,
    env: Vec<Value>,
}

impl Secrets {
    /// `args` with each secret value (a secret header's `-H` value, a URL with
    /// credentials or token parameters) replaced by `$(LATSCOPE_SECRET_N)`, the value
    /// kept here.
    fn take_from(&mut self, args: &[String], marked: &[String], secret_name: &str) -> Vec<String> {
        let mut args = args.to_vec();
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            // (index of the value, prefix kept in the argument, the value)
            let value = if (a == "-H" || a == "--header") && i + 1 < args.len() {
                Some((i + 1, "", args[i + 1].clone()))
            } else if let Some(v) = a.strip_prefix("--header=") {
                Some((i, "--header=", v.to_string()))
            } else {
                a.strip_prefix("-H")
                    .filter(|v| !v.is_empty())
                    .map(|v| (i, "-H", v.to_string()))
            };
            let secret = match value {
                Some((at, prefix, v)) => {
                    let name = v.split(':').next().unwrap_or("");
                    is_secret_header(name, marked).then(|| {
                        let key = format!("header-{}", name.trim().to_ascii_lowercase());
                        (at, prefix, v.clone(), key)
                    })
                }
                None if redact_urls(a) != *a => Some((i, "", a.clone(), "url".to_string())),
                None => None,
            };
            let Some((at, prefix, v, key)) = secret else {
                i += 1;
                continue;
            };
            let n = self.env.len() + 1;
            let var = format!("LATSCOPE_SECRET_{n}");
            let key = format!("{key}-{n}");
            self.data.insert(key.clone(), json!(v));
            self.env.push(json!({
                "name": var,
                "valueFrom": {"secretKeyRef": {"name": secret_name, "key": key}},
            }));
            args[at] = format!("{prefix}$({var})");
            i = at + 1;
        }
        args
    }
}

/// The header names marked `--redact-header NAME` (or `=NAME`) among the load's
/// arguments.
fn marked_headers(load: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = load.iter();
    while let Some(a) = it.next() {
        if a == "--redact-header" {
            out.extend(it.next().cloned());
        } else if let Some(v) = a.strip_prefix("--redact-header=") {
            out.push(v.to_string());
        }
    }
    out
}

/// Whether a scenario file holds a secret: a request header named or marked as
/// one, or a URL with credentials or token parameters.
fn scenario_has_secret(text: &str, marked: &[String]) -> bool {
    if redact_urls(text) != text {
        return true;
    }
    match crate::load::scenario::parse("scenario", text) {
        Ok(s) => s.requests.iter().any(|r| {
            r.headers
                .iter()
                .any(|(n, _)| is_secret_header(n.as_str(), marked))
        }),
        // Checked already by the load plan; when in doubt, keep it secret.
        Err(_) => true,
    }
}
