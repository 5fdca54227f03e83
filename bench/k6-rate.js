// k6 at a fixed arrival rate (the open model), for bench/fixed-rate.sh: BENCH_RATE
// iterations per second for BENCH_DURATION, one GET of BENCH_URL each, from a pool
// of BENCH_VUS pre-allocated VUs. The JSON summary goes to BENCH_SUMMARY.
// Run with --no-usage-report so k6 phones nothing home.
import http from 'k6/http';

const URL = __ENV.BENCH_URL || 'http://127.0.0.1:18181/1k';
const VUS = parseInt(__ENV.BENCH_VUS || '200', 10);

export const options = {
  discardResponseBodies: true,
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(99)'],
  scenarios: {
    rate: {
      executor: 'constant-arrival-rate',
      rate: parseInt(__ENV.BENCH_RATE || '5000', 10),
      timeUnit: '1s',
      duration: __ENV.BENCH_DURATION || '10s',
      preAllocatedVUs: VUS,
      maxVUs: VUS,
      gracefulStop: '2s',
    },
  },
};

export default function () {
  http.get(URL);
}

export function handleSummary(data) {
  const out = {};
  out[__ENV.BENCH_SUMMARY || '/tmp/k6-rate-summary.json'] = JSON.stringify(data);
  return out;
}
