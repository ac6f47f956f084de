// Loads a generated report in headless Debian chromium (playwright-core) and
// checks what it drew: one Pareto chart per comparable group, every point
// labelled with its concurrency (the label's pixels are on the chart's
// canvas), the time-scaled group marked, the predicted/measured pairs, one
// log-x CDF per metric, per-run charts on one time axis; then switches the
// axes and saves screenshots (the page and its Pareto section). GPU
// telemetry: per run that has it, power, utilisation and memory charts with
// one series per GPU on the run's time axis; every point's power source.
// usage: node report_browser_test.mjs NODE_MODULES_DIR REPORT.html EXPECT_JSON SCREENSHOT_DIR
//   EXPECT_JSON: {"points": N, "runs": N, "groups": N, "pairs": N, "scaled_groups": N, "server_runs": N,
//                 "gpu_runs": {RUN_NAME_PREFIX: GPUS, ...}, "power_sources": {SOURCE: N, ...}, "priced": N}
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { resolve, join } from "node:path";

const [modules, report, expectText, shotDir] = process.argv.slice(2);
const expect = JSON.parse(expectText);
const require = createRequire(resolve(modules) + "/");
const { chromium } = require("playwright-core");

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let failed = false;
const fail = (msg) => { console.error("FAIL: " + msg); failed = true; };
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 2000 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("request", (r) => { if (!r.url().startsWith("file:") && !r.url().startsWith("data:")) errors.push("network request: " + r.url()); });
  await page.goto(pathToFileURL(report).href);
  await page.waitForFunction(() => window.__report && window.__report.rendered, null, { timeout: 15000 });
  const state = await page.evaluate(() => ({ ...window.__report, labels: window.__report.labels.length }));
  console.log(JSON.stringify(state));
  if (errors.length) fail("page errors: " + errors.join("; "));

  // Groups: one Pareto card each, each with its own canvas; the points of a
  // group are drawn on its chart only.
  if (state.groups !== expect.groups) fail(`${state.groups} groups, expected ${expect.groups}`);
  const cards = await page.locator("#pareto > .card").count();
  if (cards !== expect.groups) fail(`${cards} Pareto charts, expected one per group (${expect.groups})`);
  if (state.points !== expect.points) fail(`Pareto charts hold ${state.points} points, expected ${expect.points}`);
  const perGroup = await page.evaluate(() => REPORT.groups.map((g, gi) => ({
    points: g.points.length, labels: window.__report.labels.filter(l => l.group === gi).length,
    canvases: document.querySelectorAll(`#pareto-${gi} canvas`).length, text: document.getElementById(`pareto-${gi}`).textContent })));
  perGroup.forEach((g, gi) => {
    if (g.canvases !== 1) fail(`group ${gi}: ${g.canvases} canvases`);
    if (g.labels !== g.points) fail(`group ${gi}: ${g.labels} labels on its chart for ${g.points} points`);
  });
  const scaled = perGroup.filter(g => / time scale/.test(g.text)).length;
  if (scaled !== expect.scaled_groups) fail(`${scaled} groups marked as time-scaled, expected ${expect.scaled_groups}`);
  if (state.frontier < expect.groups) fail(`frontiers hold ${state.frontier} points for ${expect.groups} groups`);

  // Labels: "c<concurrency>", and ink where each was drawn on its chart.
  const labels = await page.evaluate(() => window.__report.labels);
  if (labels.length !== expect.points) fail(`${labels.length} labels for ${expect.points} points`);
  const badText = labels.filter(l => !/^c\d+$/.test(l.text));
  if (badText.length) fail(`labels without a concurrency: ${JSON.stringify(badText.slice(0, 3))}`);
  const unlabelled = await page.evaluate(() => window.__report.labels.filter(l => {
    const canvas = document.querySelector(`#pareto-${l.group} canvas`);
    const ctx = canvas.getContext("2d"), dpr = devicePixelRatio || 1;
    const img = ctx.getImageData(Math.round(l.x * dpr), Math.round((l.y - 10) * dpr), Math.round(14 * dpr), Math.round(9 * dpr));
    for (let k = 0; k < img.data.length; k += 4)  // near-black text pixels (the label colour, #222)
      if (img.data[k + 3] > 128 && img.data[k] < 90 && img.data[k + 1] < 90 && img.data[k + 2] < 90) return false;
    return true;
  }));
  if (unlabelled.length) fail(`${unlabelled.length} labels left no ink on the canvas: ${JSON.stringify(unlabelled.slice(0, 3))}`);
  // Points whose x values are within 1 % of each other (a prediction and
  // the measurement it matches) are drawn within 20 px of each other: the
  // axis is not stretched over a sliver of its value.
  const near = [];
  for (const a of labels) for (const b of labels)
    if (a.group === b.group && a !== b && Math.abs(a.vx - b.vx) <= 0.01 * Math.max(a.vx, b.vx) && Math.abs(a.x - b.x) > 20)
      near.push({ group: a.group, values: [a.vx, b.vx], px: [a.x, b.x] });
  if (near.length) fail(`points within 1 % on x drawn over 20 px apart: ${JSON.stringify(near.slice(0, 2))}`);
  // No two labels drawn in one place: points at one place share theirs
  // (once "c32c32"), a different label moves clear of it.
  const ink = labels.filter(l => !l.shared), overprinted = [];
  for (let i = 0; i < ink.length; ++i) for (let j = i + 1; j < ink.length; ++j) {
    const a = ink[i], b = ink[j];
    if (a.group === b.group && Math.abs(a.x - b.x) < 20 && Math.abs(a.y - b.y) < 10) overprinted.push([a, b]);
  }
  if (overprinted.length) fail(`labels drawn over each other: ${JSON.stringify(overprinted.slice(0, 2))}`);
  // The legend shows how each series is drawn: configurations as filled
  // (measured) or hollow (predicted) points in solid or dashed rings,
  // frontiers as solid or dotted line samples.
  const markers = await page.evaluate(() => [...document.querySelectorAll("#pareto .u-legend .u-series")].map(r => ({
    label: r.textContent.trim(), style: (r.querySelector(".u-marker") || {}).dataset?.style || "" })));
  for (const m of markers) {
    const want = / frontier$/.test(m.label) ? (/^predicted/.test(m.label) ? "line dotted" : "line solid")
               : / · predicted$/.test(m.label) ? "points dashed hollow" : / · measured$/.test(m.label) ? "points solid filled" : "";
    if (want && m.style !== want) fail(`legend marker of '${m.label}' is '${m.style}', expected '${want}'`);
  }
  if (!markers.some(m => m.style === "points dashed hollow") || !markers.some(m => m.style === "points solid filled"))
    fail(`legend markers without both kinds: ${JSON.stringify(markers.slice(0, 4))}`);

  // Predicted against measured.
  if (state.pairs !== expect.pairs) fail(`${state.pairs} pairs, expected ${expect.pairs}`);
  const pairRows = await page.locator("#pairs-table tr").count();
  if (expect.pairs && pairRows !== 1 + expect.pairs) fail(`${pairRows} rows in the pairs table`);
  const errCells = await page.locator("#pairs-table td.pos, #pairs-table td.neg, #pairs-table td.inside").count();
  if (errCells !== 3 * expect.pairs) fail(`${errCells} signed error cells, expected ${3 * expect.pairs}`);

  // CDFs: one chart per metric, log x, spanning more than the smallest value.
  for (const m of ["TTFT", "ITL", "E2EL"]) {
    const s = await page.evaluate((id) => { const u = window.__uplots[id]; return u && { distr: u.scales.x.distr, min: u.scales.x.min, max: u.scales.x.max, series: u.series.length - 1 }; }, "cdf-" + m);
    if (!s) { fail(`no ${m} CDF`); continue; }
    if (s.distr !== 3) fail(`${m} CDF x axis is not logarithmic (distr ${s.distr})`);
    if (!(s.min > 0 && s.max > s.min)) fail(`${m} CDF x range ${s.min}..${s.max}`);
    if (s.series !== expect.runs) fail(`${m} CDF has ${s.series} runs, expected ${expect.runs}`);
  }

  // Per run: requests over time, per-second timeline and server metrics
  // share one x range; ISL/OSL histograms count every profiled request.
  const runs = await page.evaluate(() => REPORT.runs.map((r, i) => {
    const x = (id) => window.__uplots[id] && [window.__uplots[id].scales.x.min, window.__uplots[id].scales.x.max];
    const sum = (id) => window.__uplots[id] ? window.__uplots[id].data[1].reduce((a, b) => a + (b || 0), 0) : -1;
    return { requests: x(`run-${i}-requests`), timeline: x(`run-${i}-timeline`), server: x(`run-${i}-server`),
             isl: sum(`run-${i}-ISL`), osl: sum(`run-${i}-OSL`), n: REPORT.points[i].requests, tagged: !!document.querySelector(`#run-${i} .tag`) };
  }));
  if (runs.length !== expect.runs) fail(`${runs.length} run sections`);
  runs.forEach((r, i) => {
    if (!r.requests || !r.timeline) fail(`run ${i}: missing per-request or per-second chart`);
    else if (r.requests[0] !== r.timeline[0] || r.requests[1] !== r.timeline[1]) fail(`run ${i}: time axes differ ${r.requests} ${r.timeline}`);
    if (r.server && (r.server[0] !== r.requests[0] || r.server[1] !== r.requests[1])) fail(`run ${i}: server metrics not aligned`);
    if (r.isl !== r.n || r.osl !== r.n) fail(`run ${i}: histograms count ${r.isl}/${r.osl} of ${r.n} requests`);
    if (!r.tagged) fail(`run ${i}: not tagged measured/predicted`);
  });
  // GPU telemetry: three charts per run that has it, a series per GPU, on the run's time axis.
  const gpu = await page.evaluate(() => REPORT.runs.map((r, i) => {
    const c = (id) => { const u = window.__uplots[`run-${i}-gpu-${id}`]; return u && { series: u.series.length - 1, x: [u.scales.x.min, u.scales.x.max] }; };
    const req = window.__uplots[`run-${i}-requests`];
    return { name: r.name, power: c("power"), util: c("util"), mem: c("mem"), x: req && [req.scales.x.min, req.scales.x.max],
             note: (document.getElementById(`run-${i}-gpu-note`) || {}).textContent || "" };
  }));
  const gpuExpect = expect.gpu_runs || {};
  gpu.forEach((r) => {
    const key = Object.keys(gpuExpect).find(k => r.name.startsWith(k + " ") || r.name === k);
    if (!key) {
      if (r.power || r.util || r.mem) fail(`${r.name}: GPU charts without telemetry`);
      return;
    }
    for (const m of ["power", "util", "mem"]) {
      if (!r[m]) { fail(`${r.name}: no GPU ${m} chart`); continue; }
      if (r[m].series !== gpuExpect[key]) fail(`${r.name}: GPU ${m} chart has ${r[m].series} series, expected ${gpuExpect[key]}`);
      if (r[m].x[0] !== r.x[0] || r[m].x[1] !== r.x[1]) fail(`${r.name}: GPU ${m} chart not on the run's time axis ${r[m].x} ${r.x}`);
    }
    if (!/mean power \d+ W over the profiling window/.test(r.note)) fail(`${r.name}: telemetry note "${r.note}"`);
  });
  const gpuRuns = gpu.filter(r => r.power).length;
  if (gpuRuns !== Object.keys(gpuExpect).length) fail(`${gpuRuns} runs with GPU charts, expected ${Object.keys(gpuExpect).length}`);
  const sources = await page.evaluate(() => {
    const n = {}; for (const p of REPORT.points) if (p.power_source) n[p.power_source] = (n[p.power_source] || 0) + 1;
    return { n, priced: REPORT.points.filter(p => p.price_source === "--gpu-price-per-hour").length,
             cells: [...document.querySelectorAll("#points td.power-source")].filter(td => td.textContent !== "–").length };
  });
  if (JSON.stringify(Object.entries(sources.n).sort()) !== JSON.stringify(Object.entries(expect.power_sources || {}).sort()))
    fail(`power sources ${JSON.stringify(sources.n)}, expected ${JSON.stringify(expect.power_sources)}`);
  if (expect.priced !== undefined && sources.priced !== expect.priced) fail(`${sources.priced} points priced by the flag, expected ${expect.priced}`);
  const powered = Object.values(expect.power_sources || {}).reduce((a, b) => a + b, 0);
  if (sources.cells !== powered) fail(`${sources.cells} power cells in the table, expected ${powered}`);

  const serverRuns = runs.filter(r => r.server).length;
  if (serverRuns !== expect.server_runs) fail(`${serverRuns} runs with server metrics, expected ${expect.server_runs}`);
  const rows = await page.locator("#points tr").count();
  if (rows !== 1 + expect.runs) fail(`${rows} table rows`);
  // Each run's group is its chart's short tag (G1, G2, ...), the whole label
  // (a traces workload's is its synth command) in the cell's title: the
  // table stays one line a run.
  const tags = await page.evaluate(() => REPORT.points.map((p, i) => {
    const cell = document.querySelectorAll("#points tr")[i + 1].children[2];
    const head = document.querySelector(`#pareto-${p.group} h3`).textContent;
    return { text: cell.textContent, title: cell.title, label: REPORT.groups[p.group].label, head, group: p.group };
  }));
  for (const t of tags) {
    if (t.text !== `G${t.group + 1}`) fail(`group cell '${t.text}', expected G${t.group + 1}`);
    if (t.title !== t.label) fail(`group cell title '${t.title}' is not the group's label '${t.label}'`);
    if (!t.head.startsWith(`${t.text} · `)) fail(`chart heading '${t.head}' does not start with its tag ${t.text}`);
  }

  // Switching axes re-renders every group's chart with the same points.
  await page.selectOption("#pct", "p90");
  await page.selectOption("#xaxis", "e2el");
  const yOptions = await page.locator("#yaxis option").count();
  if (yOptions > 1) await page.selectOption("#yaxis", "cost");
  // The section title follows the axes chosen.
  const title = await page.locator("#pareto-title").textContent();
  const wantTitle = (yOptions > 1 ? "$ per million tokens" : "Total tokens/s/GPU") + " against end-to-end latency";
  if (!title.startsWith(wantTitle)) fail(`section title '${title}' after switching axes (want '${wantTitle}...')`);
  const after = await page.evaluate(() => ({ ...window.__report, labels: window.__report.labels.length }));
  if (after.points !== expect.points || after.labels !== expect.points) fail(`after switching: ${after.points} points, ${after.labels} labels`);
  if (after.groups !== expect.groups) fail(`after switching: ${after.groups} groups`);
  await page.selectOption("#pct", "p50");
  await page.selectOption("#xaxis", "intvty");
  if (yOptions > 1) await page.selectOption("#yaxis", "tput");
  const back = await page.locator("#pareto-title").textContent();
  if (!back.startsWith("Total tokens/s/GPU against interactivity")) fail(`section title '${back}' after switching back`);
  await page.screenshot({ path: join(shotDir, "report.png"), fullPage: true });
  await page.locator("#pareto").screenshot({ path: join(shotDir, "pareto.png") });
  const gpuRun = gpu.findIndex(r => r.power && r.power.series > 1);
  if (gpuRun >= 0) await page.locator(`#run-${gpuRun}`).screenshot({ path: join(shotDir, "gpu.png") });
  await page.locator("#points").screenshot({ path: join(shotDir, "table.png") });
} catch (e) {
  fail(String(e));
} finally {
  await browser.close();
}
if (failed) process.exit(1);
console.log("report renders in chromium");
