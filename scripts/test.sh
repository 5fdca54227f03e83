#!/usr/bin/env bash
# The one command that runs latscope's checks: format, lints, every test.
# Installs what the tests need first (as root, from Debian's packages) when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
# The slow-DNS finding test runs a tiny DNS responder (tests/data/slow_dns.py).
command -v python3 >/dev/null 2>&1 || need+=(python3)
# Real servers and self-signed certificates for the TLS and wire tests (tests/probe_tls.rs, tests/findings_proxy.rs).
[ -x /usr/sbin/nginx ] || need+=(nginx)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
# The HTML report's browser test opens it in headless Chromium (Debian's package).
[ -x /usr/bin/chromium ] || need+=(chromium)
# The cache conformance suite (tests/caches.rs) runs real caches in front of a Python
# origin: Varnish, nginx (proxy_cache) and Apache (mod_cache_disk, mod_deflate).
command -v varnishd >/dev/null 2>&1 || need+=(varnish)
command -v nginx >/dev/null 2>&1 || need+=(nginx)
command -v apache2 >/dev/null 2>&1 || need+=(apache2)
# Prometheus (remote-write receiver, promtool), node_exporter and PostgreSQL for the
# ecosystem tests (--out prometheus, --watch, export --format openmetrics).
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v prometheus-node-exporter >/dev/null 2>&1 || need+=(prometheus-node-exporter)
[ -d /usr/lib/postgresql ] || need+=(postgresql)
[ -d /usr/lib/python3/dist-packages/psycopg2 ] || need+=(python3-psycopg2)  # tests/watch.rs: the API's database pool
# HTTP/3's real peer (tests/http3.rs): Caddy serves h3 over UDP with its internal CA.
command -v caddy >/dev/null 2>&1 || need+=(caddy)
# The disk suite's volumes (tests/disk_suite.rs): a FUSE filesystem that adds latency
# (tests/data/slowfs.c, built against libfuse3) under a loop device.
command -v fusermount3 >/dev/null 2>&1 || need+=(fuse3)
[ -f /usr/include/fuse3/fuse.h ] || need+=(libfuse3-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
# The live view's tests drive the real binary in tmux.
command -v tmux >/dev/null 2>&1 || need+=(tmux)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "installing: ${need[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "warning: missing ${need[*]} (install them, or some tests will be skipped)" >&2
  fi
fi

# kubernetes-validate checks `latscope k8s job`'s manifests against Kubernetes' schemas
# offline (tests/k8s.rs).
if ! command -v kubernetes-validate >/dev/null 2>&1 && command -v pip3 >/dev/null 2>&1; then
  pip3 install --quiet kubernetes-validate 2>/dev/null || pip3 install --quiet --break-system-packages kubernetes-validate \
    || echo "warning: pip install kubernetes-validate failed (the manifest schema check will be skipped)" >&2
fi

# httplint (the engine behind REDbot) is the suite's second opinion on RFC 9111.
if ! command -v httplint >/dev/null 2>&1 && command -v pip3 >/dev/null 2>&1; then
  pip3 install --quiet httplint 2>/dev/null || pip3 install --quiet --break-system-packages httplint \
    || echo "warning: pip install httplint failed (its conformance test will be skipped)" >&2
fi

cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings
cargo test --locked
