// Writes a synthetic GPU metrics CSV for a result directory, as
// `nvidia-smi --query-gpu=timestamp,index,power.draw,utilization.gpu,memory.used,temperature.gpu
// --format=csv -lms 250` would over the run: local time, units in the
// values, every GPU each 0.25 s from 1 s before the first request to 1 s
// after the last, one utilisation [N/A] per GPU.
// usage: node write_gpu_metrics.mjs RESULT_DIR OUT.csv GPUS
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [dir, out, gpusText] = process.argv.slice(2);
const gpus = Number(gpusText);
let start = Infinity, end = 0;
for (const line of readFileSync(join(dir, "profile_export.jsonl"), "utf8").split("\n")) {
  if (!line) continue;
  const md = JSON.parse(line).metadata;
  start = Math.min(start, md.request_start_ns / 1e6);  // ms (a double holds ms exactly enough)
  end = Math.max(end, md.request_end_ns / 1e6);
}
const pad = (n, w = 2) => String(n).padStart(w, "0");
const stamp = (ms) => {
  const d = new Date(ms);
  return `${d.getFullYear()}/${pad(d.getMonth() + 1)}/${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:` +
         `${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
};
const rows = ["timestamp, index, power.draw [W], utilization.gpu [%], memory.used [MiB], temperature.gpu"];
let k = 0;
for (let t = start - 1000; t <= end + 1000; t += 250, ++k) {
  const busy = t >= start && t <= end;
  for (let g = 0; g < gpus; ++g) {
    const power = (busy ? 450 + 150 * Math.sin(k / 6 + g) : 120) + 40 * g;
    const util = k === 5 ? "[N/A]" : `${busy ? 80 + g * 5 : 0} %`;
    rows.push(`${stamp(t)}, ${g}, ${power.toFixed(2)} W, ${util}, ${30000 + 2000 * g + (busy ? 10 * k : 0)} MiB, ${50 + g}`);
  }
}
writeFileSync(out, rows.join("\n") + "\n");
