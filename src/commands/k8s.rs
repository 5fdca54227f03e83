//! `latscope k8s job --shards N --image IMAGE -- LOAD ARGS`: the flags and the load
//! checked as `latscope load` would check them, the scenario file read, and the
//! manifests of [`crate::k8s`] printed as YAML documents (each one JSON, which is
//! YAML); nothing is sent anywhere. A load that carries secrets has them in a Secret,
//! and the command says so on stderr.

use std::time::SystemTime;

use clap::Parser;
use serde_json::Value;

use crate::cli::{Cli, Command, K8sArgs, K8sCommand, K8sJobArgs};
use crate::error::exit;
use crate::k8s::{dns_label, Job, SCENARIO_DIR, SCENARIO_FILE};
use crate::usage;

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

/// The manifests of `job`, its flags and load checked, its scenario file read.
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
    let mut scenario: Option<String> = None;
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
            scenario = Some(text);
            pod_args.push(format!("{SCENARIO_DIR}/{SCENARIO_FILE}"));
        }
    }
    let job = Job {
        name: job.name.clone(),
        namespace: job.namespace.clone(),
        image: job.image.clone(),
        cpu: job.cpu.clone(),
        memory: job.memory.clone(),
        shards: n,
        start_at: humantime::format_rfc3339_seconds(now + job.start_in).to_string(),
    };
    Ok(crate::k8s::manifests(&job, &pod_args, scenario.as_deref()))
}
