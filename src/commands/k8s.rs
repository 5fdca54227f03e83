//! `latscope k8s job --shards N --image IMAGE -- LOAD ARGS`: the manifests that let
//! Kubernetes start and place a sharded load — a ConfigMap with the scenario file and
//! an Indexed Job whose pods each run `latscope load … --shards N --start-at T` (the
//! index comes from `JOB_COMPLETION_INDEX`) and print their run as an export file on
//! stdout, for `kubectl logs` → `latscope import` → `latscope merge`. Printed as YAML
//! documents (each one JSON, which is YAML); nothing is sent anywhere.
//!
//! Secrets never go into the Job's arguments: a `-H` value whose header is secret
//! (named as one, or marked `--redact-header`) and a URL with credentials or token
//! parameters go into a Secret (`NAME-secrets`), each argument replaced by
//! `$(LATSCOPE_SECRET_N)`, which Kubernetes expands from the container's env
//! (`env.valueFrom.secretKeyRef`); a scenario file that holds any is carried in a
//! Secret instead of the ConfigMap. The command says so on stderr.

use std::time::SystemTime;

use clap::Parser;
use serde_json::{json, Value};

use crate::cli::{Cli, Command, K8sArgs, K8sCommand, K8sJobArgs};
use crate::error::exit;
use crate::usage;

/// Where the scenario file is mounted in each pod.
const SCENARIO_DIR: &str = "/etc/latscope";
/// The largest scenario file carried (a ConfigMap holds at most 1 MiB).
const MAX_SCENARIO: u64 = 900 * 1024;
/// Load flags the Job sets itself.
const OWN_FLAGS: [&str; 7] = [
    "--shard",
    "--shards",
    "--start-at",
    "--db",
    "--no-save",
    "--json",
    "--export",
];
/// What each pod runs: the load (its text to stderr, so the log's stdout is the
/// export), then its run as an export file; the load's exit code is the pod's.
const POD_SCRIPT: &str = "latscope load \"$@\" >&2; rc=$?; latscope export last || rc=1; exit $rc";

/// Runs `latscope k8s`.
pub fn run(args: K8sArgs) -> anyhow::Result<u8> {
    match args.command {
        K8sCommand::Job(job) => {
            let docs = job_manifests(&job, SystemTime::now())?;
            let secrets: Vec<&Value> = docs.iter().filter(|d| d["kind"] == "Secret").collect();
            for s in secrets {
                let keys: Vec<String> = s["stringData"]
                    .as_object()
                    .map(|m| m.keys().cloned().collect())
                    .unwrap_or_default();
                eprintln!(
                    "latscope: {} secret value(s) ({}) are in Secret {}, which the pods read (env valueFrom secretKeyRef, or a mounted file) — not in the Job's arguments",
                    keys.len(),
                    keys.join(", "),
                    s["metadata"]["name"].as_str().unwrap_or("")
                );
            }
            let mut out = String::new();
            for d in docs {
                out.push_str("---\n");
                out.push_str(&serde_json::to_string_pretty(&d)?);
                out.push('\n');
            }
            // The Secret must hold the real values: not redacted for output.
            super::output::say_verbatim(&out)?;
            Ok(exit::OK)
        }
    }
}

/// Whether `s` is a DNS-1123 label of at most `max` characters (Kubernetes names).
fn dns_label(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// The ConfigMap (when the load has a scenario file) and the Indexed Job.
pub(crate) fn job_manifests(job: &K8sJobArgs, now: SystemTime) -> anyhow::Result<Vec<Value>> {
    let n = job.shards;
    if !(1..=crate::load::shard::MAX_SHARDS).contains(&n) {
        return Err(usage!(
            "--shards {n}: between 1 and {}",
            crate::load::shard::MAX_SHARDS
        ));
    }
    // The Job's pods are named NAME-INDEX-xxxxx: leave room for both.
    if !dns_label(&job.name, 40) {
        return Err(usage!(
            "--name {:?}: a Kubernetes name is lowercase letters, digits and '-', at most 40 here",
            job.name
        ));
    }
    if !dns_label(&job.namespace, 63) {
        return Err(usage!(
            "--namespace {:?} is not a Kubernetes namespace name",
            job.namespace
        ));
    }
    for a in &job.load {
        let flag = a.split('=').next().unwrap_or("");
        if OWN_FLAGS.contains(&flag) {
            return Err(usage!(
                "{flag}: `latscope k8s job` sets it for every pod; leave it out"
            ));
        }
    }
    // The load as each pod will run it, checked here as `latscope load` would (the
    // last shard has the smallest share of -c and -n).
    let mut argv = vec!["latscope".to_string(), "load".to_string()];
    argv.extend(job.load.iter().cloned());
    argv.extend(["--shard".to_string(), format!("{n}/{n}")]);
    let cli = Cli::try_parse_from(&argv)
        .map_err(|e| usage!("the load after --: {}", e.render().to_string().trim()))?;
    let Command::Load(load) = cli.command else {
        unreachable!("parsed as load");
    };
    crate::config::load::plan(&load).map_err(|e| usage!("the load after --: {e}"))?;

    // A scenario file travels in the ConfigMap; the pods read it where it is mounted.
    let mut pod_args: Vec<String> = Vec::new();
    let mut scenario: Option<(String, String)> = None;
    let mut it = job.load.iter().peekable();
    while let Some(a) = it.next() {
        let path = if a == "-f" || a == "--file" {
            pod_args.push(a.clone());
            it.next().cloned()
        } else if let Some(p) = a.strip_prefix("--file=") {
            pod_args.push("--file".into());
            Some(p.to_string())
        } else {
            pod_args.push(a.clone());
            None
        };
        if let Some(path) = path {
            let text = crate::input::read_text_capped(path.as_ref(), MAX_SCENARIO).map_err(
                |e| match e {
                    crate::input::InputError::TooLarge { .. } => usage!(
                        "-f {path}: over {} KiB, more than a ConfigMap holds",
                        MAX_SCENARIO / 1024
                    ),
                    e => usage!("-f {path}: {e}"),
                },
            )?;
            scenario = Some(("scenario.toml".into(), text));
            pod_args.push(format!("{SCENARIO_DIR}/scenario.toml"));
        }
    }
    // Secrets out of the arguments, into a Secret the pods read through env.
    let marked = marked_headers(&job.load);
    let secret_name = format!("{}-secrets", job.name);
    let mut secret_data = serde_json::Map::new();
    let mut secret_env = Vec::new();
    let mut scenario_secret = false;
    if let Some((_, text)) = &scenario {
        scenario_secret = scenario_has_secret(text, &marked);
        if scenario_secret {
            secret_data.insert("scenario.toml".into(), json!(text));
        }
    }
    let mut i = 0;
    while i < pod_args.len() {
        let a = pod_args[i].clone();
        // (index of the value, prefix kept in the argument, the value)
        let value = if (a == "-H" || a == "--header") && i + 1 < pod_args.len() {
            Some((i + 1, String::new(), pod_args[i + 1].clone()))
        } else if let Some(v) = a.strip_prefix("--header=") {
            Some((i, "--header=".to_string(), v.to_string()))
        } else {
            a.strip_prefix("-H")
                .filter(|v| !v.is_empty())
                .map(|v| (i, "-H".to_string(), v.to_string()))
        };
        let secret = match &value {
            Some((at, prefix, v)) => {
                let name = v.split(':').next().unwrap_or("");
                crate::redact::is_secret_header(name, &marked).then(|| {
                    (
                        *at,
                        prefix.clone(),
                        v.clone(),
                        format!("header-{}", name.trim().to_ascii_lowercase()),
                    )
                })
            }
            None if crate::redact::redact_urls(&a) != a => {
                Some((i, String::new(), a.clone(), "url".to_string()))
            }
            None => None,
        };
        if let Some((at, prefix, v, key)) = secret {
            let n = secret_env.len() + 1;
            let var = format!("LATSCOPE_SECRET_{n}");
            let key = format!("{key}-{n}");
            secret_data.insert(key.clone(), json!(v));
            secret_env.push(json!({
                "name": var,
                "valueFrom": {"secretKeyRef": {"name": secret_name, "key": key}},
            }));
            pod_args[at] = format!("{prefix}$({var})");
            i = at + 1;
        } else {
            i += 1;
        }
    }
    let start_at = humantime::format_rfc3339_seconds(now + job.start_in).to_string();
    pod_args.extend([
        "--shards".into(),
        n.to_string(),
        "--start-at".into(),
        start_at.clone(),
    ]);

    let labels = json!({
        "app.kubernetes.io/name": "latscope",
        "app.kubernetes.io/component": "load-shard",
        "latscope.dev/run": job.name,
    });
    let mut docs = Vec::new();
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    if !secret_data.is_empty() {
        docs.push(json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": secret_name, "namespace": job.namespace, "labels": labels},
            "stringData": secret_data,
        }));
    }
    if scenario_secret {
        volumes.push(json!({"name": "scenario", "secret": {
            "secretName": secret_name,
            "items": [{"key": "scenario.toml", "path": "scenario.toml"}],
        }}));
        mounts.push(json!({"name": "scenario", "mountPath": SCENARIO_DIR, "readOnly": true}));
    } else if let Some((key, text)) = scenario {
        let cm = format!("{}-scenario", job.name);
        docs.push(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": cm, "namespace": job.namespace, "labels": labels},
            "data": {key: text},
        }));
        volumes.push(json!({"name": "scenario", "configMap": {"name": cm}}));
        mounts.push(json!({"name": "scenario", "mountPath": SCENARIO_DIR, "readOnly": true}));
    }
    let mut env = vec![
        json!({"name": "LATSCOPE_DB", "value": "/tmp/latscope.db"}),
        json!({"name": "TERM", "value": "dumb"}),
    ];
    env.extend(secret_env);
    let command = vec![
        "/bin/sh".to_string(),
        "-c".to_string(),
        POD_SCRIPT.to_string(),
        "latscope".to_string(),
    ];
    docs.push(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
            "labels": labels,
            "annotations": {"latscope.dev/start-at": start_at},
        },
        "spec": {
            "completionMode": "Indexed",
            "completions": n,
            "parallelism": n,
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
                        "args": pod_args,
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
    }));
    Ok(docs)
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
    if crate::redact::redact_urls(text) != text {
        return true;
    }
    match crate::load::scenario::parse("scenario", text) {
        Ok(s) => s.requests.iter().any(|r| {
            r.headers
                .iter()
                .any(|(n, _)| crate::redact::is_secret_header(n.as_str(), marked))
        }),
        // Checked already by the load plan; when in doubt, keep it secret.
        Err(_) => true,
    }
}
