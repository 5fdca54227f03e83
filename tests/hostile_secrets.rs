//! Issue 28 items 11 and 12: secrets stay out of what latscope prints. URL
//! credentials and token query parameters were redacted in the stored run but
//! printed as given in the live text and the `--json` output; now every output
//! redacts them unless `--show-secrets`. `k8s job` put `-H` values and URL secrets
//! into the Job's container arguments; now they go into a Kubernetes Secret that
//! the pods read through `env.valueFrom.secretKeyRef`.

use std::time::Duration;

use crate::hostile_py::measure;
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
