# Sourced by bench/h2.sh and bench/h2-server-cost.sh: the private h2c nginx both
# measure against (1 worker, /1k, keep-alive for 10M requests so no connection is
# recycled), started pinned to CPU $NGX_CPU from a config in $NGX_DIR on
# 127.0.0.1:$NGX_PORT, stopped on exit. Needs NGX_DIR, NGX_PORT, NGX_CPU, URL set.

h2_nginx_start() {
  mkdir -p "$NGX_DIR"/{www,logs,tmp}
  head -c 1024 /dev/zero | tr '\0' a >"$NGX_DIR/www/1k"
  cat >"$NGX_DIR/nginx.conf" <<CONF
daemon on;
worker_processes 1;
pid $NGX_DIR/nginx.pid;
error_log $NGX_DIR/logs/error.log warn;
events { worker_connections 4096; use epoll; }
http {
    access_log off;
    default_type application/octet-stream;
    keepalive_requests 10000000;
    http2_max_requests 10000000;
    http2_max_concurrent_streams 256;
    server_tokens off;
    etag off;
    client_body_temp_path $NGX_DIR/tmp;
    server {
        listen 127.0.0.1:$NGX_PORT http2;
        root $NGX_DIR/www;
        location = /1k { }
        location / { return 404; }
    }
}
CONF
  taskset -c "$NGX_CPU" nginx -p "$NGX_DIR/" -e "$NGX_DIR/logs/error.log" -c "$NGX_DIR/nginx.conf" 2>/dev/null
  trap h2_nginx_stop EXIT
  for _ in $(seq 50); do h2load -n 1 -c 1 "$URL" 2>/dev/null | grep -q '1 succeeded' && break; sleep 0.1; done
  local p
  for p in $(cat "$NGX_DIR/nginx.pid") $(pgrep -P "$(cat "$NGX_DIR/nginx.pid")"); do
    taskset -pc "$NGX_CPU" "$p" >/dev/null
  done
}

h2_nginx_stop() {
  [[ -s $NGX_DIR/nginx.pid ]] && kill "$(cat "$NGX_DIR/nginx.pid")" 2>/dev/null || true
}
