//! `latscope k8s job` (issue 19.3): the manifests of a sharded load on Kubernetes — a
//! ConfigMap with the scenario and an Indexed Job (batch/v1, GA since 1.24) — checked
//! field by field, and against the real Kubernetes schemas offline with
//! `kubernetes-validate` (PyPI; scripts/test.sh installs it) in strict mode.

use std::process::Command;

use crate::util::{documents, run};

/// With a scenario file: the ConfigMap carries it, the Job runs 3 pods at once
/// (Indexed, completions = parallelism = 3, no retries), each running the load from
/// the mounted file with `--shards 3` (its index from JOB_COMPLETION_INDEX) and one
/// shared `--start-at`, spread over nodes, with resources, as a non-root user; the
/// manifests pass Kubernetes 1.25's schemas strictly (the oldest kubernetes-validate
/// ships; Indexed Jobs are GA since 1.24), and a misspelled field would not.
#[test]
fn job_manifests_carry_the_shards_and_validate() {
    let dir = crate::util::scratch().join("k8s");
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("api.toml");
    std::fs::write(
        &scenario,
        "base_url = \"http://api.internal:8080\"\n[load]\nrate = 600\nduration = \"30s\"\n\n[[request]]\nname = \"home\"\npath = \"/\"\n",
    )
    .unwrap();
    let sc = scenario.to_str().unwrap();
    let out = run(&[
        "k8s",
        "job",
        "--shards",
        "3",
        "--image",
        "registry.example/latscope:0.1",
        "--namespace",
        "loadtest",
        "--start-in",
        "2m",
        "--",
        "-f",
        sc,
        "--threads",
        "2",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs = documents(&out.stdout);
    assert_eq!(docs.len(), 2);
    let (cm, job) = (&docs[0], &docs[1]);
    assert_eq!(cm["kind"], "ConfigMap");
    assert!(cm["data"]["scenario.toml"]
        .as_str()
        .unwrap()
        .contains("api.internal"));
    assert_eq!(job["kind"], "Job");
    assert_eq!(job["apiVersion"], "batch/v1");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], 3);
    assert_eq!(spec["parallelism"], 3);
    assert_eq!(spec["backoffLimit"], 0);
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let anti =
        &pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(
        anti["podAffinityTerm"]["topologyKey"],
        "kubernetes.io/hostname"
    );
    let c = &pod["containers"][0];
    assert_eq!(c["image"], "registry.example/latscope:0.1");
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let at = |flag: &str| args[args.iter().position(|a| *a == flag).unwrap() + 1];
    assert_eq!(at("-f"), "/etc/latscope/scenario.toml");
    assert_eq!(at("--shards"), "3");
    assert_eq!(at("--threads"), "2");
    let start = humantime::parse_rfc3339(at("--start-at")).unwrap();
    let ahead = start
        .duration_since(std::time::SystemTime::now())
        .unwrap()
        .as_secs();
    assert!((100..=120).contains(&ahead), "{ahead}");
    assert!(c["resources"]["requests"]["cpu"].is_string());
    assert_eq!(c["volumeMounts"][0]["mountPath"], "/etc/latscope");
    assert!(c["command"][2]
        .as_str()
        .unwrap()
        .contains("latscope export last"));

    if !crate::util_require::require("kubernetes-validate") {
        return;
    }
    let version = Command::new("kubernetes-validate")
        .arg("--version")
        .output()
        .expect("kubernetes-validate runs");
    assert!(version.status.success());
    let file = dir.join("job.yaml");
    std::fs::write(&file, &out.stdout).unwrap();
    let v = Command::new("kubernetes-validate")
        .args(["-k", "1.25.0", "--strict"])
        .arg(&file)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&v.stdout).to_string() + &String::from_utf8_lossy(&v.stderr);
    assert!(v.status.success(), "{said}");
    assert_eq!(said.matches("passed").count(), 2, "{said}");
    // The check is real: a misspelled field fails it.
    let bad = dir.join("bad.yaml");
    let text = String::from_utf8_lossy(&out.stdout).replace("\"parallelism\"", "\"paralelism\"");
    std::fs::write(&bad, text).unwrap();
    let v = Command::new("kubernetes-validate")
        .args(["-k", "1.25.0", "--strict"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!v.status.success());
}

/// A URL load needs no ConfigMap; a load the shards cannot split (-c 2 over 3),
/// flags the Job sets itself, bad names and a missing --image are usage errors.
#[test]
fn job_refuses_what_cannot_run() {
    let out = run(&[
        "k8s",
        "job",
        "--shards",
        "2",
        "--image",
        "x",
        "--",
        "http://api.internal/",
        "--rate",
        "100",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs = documents(&out.stdout);
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0]["kind"], "Job");
    for (args, says) in [
        (
            vec![
                "--shards",
                "3",
                "--image",
                "x",
                "--",
                "http://a/",
                "-c",
                "2",
            ],
            "fewer than the 3 shards",
        ),
        (
            vec![
                "--shards",
                "3",
                "--image",
                "x",
                "--",
                "http://a/",
                "--shard",
                "1/3",
            ],
            "sets it for every pod",
        ),
        (
            vec![
                "--shards",
                "3",
                "--image",
                "x",
                "--name",
                "Load_1",
                "--",
                "http://a/",
            ],
            "--name",
        ),
        (
            vec![
                "--shards",
                "3",
                "--image",
                "x",
                "--",
                "http://a/",
                "--rate",
                "x",
            ],
            "the load after --",
        ),
        (vec!["--shards", "3", "--", "http://a/"], "--image"),
    ] {
        let mut all = vec!["k8s", "job"];
        all.extend(args.iter());
        let out = run(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
