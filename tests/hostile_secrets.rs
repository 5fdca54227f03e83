//! Issue 28 items 11 and 12: secrets stay out of what latscope prints. URL
//! credentials and token query parameters were redacted in the stored run but
//! printed as given in the live text and the `--json` output; now every output
//! redacts them unless `--show-secrets`. `k8s job` put `-H` values and URL secrets
//! into the Job's container arguments; now they go into a Kubernetes Secret that
//! the pods read through `env.valueFrom.secretKeyRef`.

use std::time::Duration;

use crate::hostile_py::measure;
use crate::util::documents;
use crate::util_hostile::{response, Hostile, Reply};

const LIMIT: Duration = Duration::from_secs(60);

fn server() -> Hostile {
    Hostile::start(|_| Reply::Bytes(response("200 OK", &[], "ok")))
}

/// Item 11: probe, load and diagnose, as text and as JSON, print no URL password
/// and no token value; `--show-secrets` prints them as given.
#[test]
fn urls_are_redacted_in_every_output() {
    let s = server();
    let url = format!(
        "http://alice:pa55w0rd@{}/x?access_token=t0k3n&page=2",
        s.addr
    );
    let runs: Vec<Vec<&str>> = vec![
        vec!["probe", "-n", "2", "--no-save", &url],
        vec!["probe", "-n", "2", "--no-save", "--json", &url],
        vec!["load", "-n", "5", "--no-save", &url],
        vec!["load", "-n", "5", "--no-save", "--json", &url],
        vec!["diagnose", "-n", "2", "--no-load", "--no-save", &url],
        vec![
            "diagnose",
            "-n",
            "2",
            "--no-load",
            "--no-save",
            "--json",
            &url,
        ],
    ];
    for args in &runs {
        let m = measure(args, LIMIT);
        assert_eq!(m.code(), Some(0), "{args:?}: {}", m.stderr());
        let all = format!("{}{}", m.stdout(), m.stderr());
        for secret in ["pa55w0rd", "t0k3n"] {
            assert!(!all.contains(secret), "{args:?} printed {secret}: {all}");
        }
        assert!(all.contains("[redacted]"), "{args:?}: {all}");
        assert!(
            all.contains("page=2"),
            "{args:?}: the rest of the URL stays: {all}"
        );
    }
    let mut shown = runs[1].clone();
    shown.insert(1, "--show-secrets");
    let m = measure(&shown, LIMIT);
    assert_eq!(m.code(), Some(0), "{}", m.stderr());
    assert!(m.stdout().contains("t0k3n"), "{}", m.stdout());
}

/// Item 12: `-H` values of secret headers (named as secrets, or marked
/// `--redact-header`) and a URL with credentials or a token go into a Secret; the
/// Job's arguments say `$(LATSCOPE_SECRET_N)`, which Kubernetes expands from env
/// entries with `valueFrom.secretKeyRef`; plain headers stay as they are; the
/// command says so; the manifests pass Kubernetes' schemas.
#[test]
fn k8s_job_keeps_secrets_in_a_secret() {
    let url = "http://bob:pa55@api.internal:8080/x?api_key=k3y&page=1";
    let m = measure(
        &[
            "k8s",
            "job",
            "--shards",
            "2",
            "--image",
            "img:1",
            "--name",
            "shop",
            "--",
            "-n",
            "100",
            "-H",
            "Authorization: Bearer s3cr3t",
            "-H",
            "Accept: text/html",
            "--header=X-Tenant: t3nant",
            "--redact-header",
            "X-Tenant",
            url,
        ],
        LIMIT,
    );
    assert_eq!(m.code(), Some(0), "{}", m.stderr());
    let docs = documents(m.stdout().as_bytes());
    let secret = docs
        .iter()
        .find(|d| d["kind"] == "Secret")
        .expect("a Secret");
    let job = docs.iter().find(|d| d["kind"] == "Job").expect("a Job");
    assert_eq!(secret["metadata"]["name"], "shop-secrets");
    let data = secret["stringData"].as_object().unwrap();
    let values: Vec<&str> = data.values().map(|v| v.as_str().unwrap()).collect();
    assert!(
        values.contains(&"Authorization: Bearer s3cr3t"),
        "{values:?}"
    );
    assert!(values.contains(&"X-Tenant: t3nant"), "{values:?}");
    assert!(values.contains(&url), "{values:?}");
    let job_text = job.to_string();
    for s in ["s3cr3t", "t3nant", "pa55", "k3y"] {
        assert!(!job_text.contains(s), "{s} in the Job: {job_text}");
    }
    let c = &job["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(args.contains(&"Accept: text/html"), "{args:?}");
    assert!(args.contains(&"--header=$(LATSCOPE_SECRET_2)"), "{args:?}");
    // Every $(VAR) has an env entry reading its key from the Secret.
    for (n, arg) in args
        .iter()
        .filter(|a| a.contains("$(LATSCOPE_SECRET_"))
        .enumerate()
    {
        let var = format!("LATSCOPE_SECRET_{}", n + 1);
        assert!(arg.contains(&var), "{arg}");
        let env = c["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == var.as_str())
            .unwrap();
        let key = env["valueFrom"]["secretKeyRef"]["key"].as_str().unwrap();
        assert_eq!(env["valueFrom"]["secretKeyRef"]["name"], "shop-secrets");
        assert!(data.contains_key(key), "{key}");
    }
    assert!(m.stderr().contains("Secret shop-secrets"), "{}", m.stderr());

    // A scenario file with a secret header travels in the Secret, mounted.
    let dir = crate::util::temp_dir("k8s-secret");
    let sc = dir.join("s.toml");
    std::fs::write(
        &sc,
        "base_url = \"http://api.internal:8080\"\n[[request]]\npath = \"/\"\nheaders = { Authorization = \"Bearer sc3n\" }\n",
    )
    .unwrap();
    let m2 = measure(
        &[
            "k8s",
            "job",
            "--shards",
            "2",
            "--image",
            "img:1",
            "--",
            "-n",
            "10",
            "-f",
            sc.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(m2.code(), Some(0), "{}", m2.stderr());
    let docs2 = documents(m2.stdout().as_bytes());
    assert!(docs2.iter().all(|d| d["kind"] != "ConfigMap"), "{docs2:?}");
    let job2 = docs2.iter().find(|d| d["kind"] == "Job").unwrap();
    assert!(!job2.to_string().contains("sc3n"));
    assert_eq!(
        job2["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"],
        "latscope-load-secrets"
    );

    if !crate::util_require::require("kubernetes-validate") {
        return;
    }
    for (name, out) in [("a.yaml", m.stdout()), ("b.yaml", m2.stdout())] {
        let file = dir.join(name);
        std::fs::write(&file, out).unwrap();
        let v = std::process::Command::new("kubernetes-validate")
            .args(["-k", "1.25.0", "--strict"])
            .arg(&file)
            .output()
            .unwrap();
        let said =
            String::from_utf8_lossy(&v.stdout).to_string() + &String::from_utf8_lossy(&v.stderr);
        assert!(v.status.success(), "{name}: {said}");
    }
}
