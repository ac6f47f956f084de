// Loads a generated report in headless Debian chromium (playwright-core) and
// checks what it drew: one Pareto chart per comparable group, every point
// labelled with its concurrency (the label's pixels are on the chart's
// canvas), the time-scaled group marked, the predicted/measured pairs, one
// log-x CDF per metric, per-run charts on one time axis; then switches the
// axes and saves screenshots (the page and its Pareto section). GPU
// telemetry: per run that has it, power, utilisation and memory charts with
// one series per GPU on the run's time axis; every point's power source;
// each capacity search's answer, SLO charts and points; the warnings;
// per-group CDFs, percentile-bar keys, TTFT and ITL apart, histogram bins,
// warmup shading, tooltips on hover, and an 800 px page without overflow.
// usage: node report_browser_test.mjs NODE_MODULES_DIR REPORT.html EXPECT_JSON SCREENSHOT_DIR
//   EXPECT_JSON: {"points": N, "runs": N, "groups": N, "pairs": N, "scaled_groups": N, "server_runs": N,
//                 "gpu_runs": {RUN_NAME_PREFIX: GPUS, ...}, "power_sources": {SOURCE: N, ...}, "priced": N,
//                 "capacity": N}
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
  // A pair across time scales shows the prediction on the measurement's clock, marked.
  const scaledPairs = await page.evaluate(() => REPORT.pairs.filter(p => p.time_scale_factor !== 1).length);
  const scaledCells = await page.locator("#pairs-table td.scaled-pair").count();
  if (scaledPairs !== (expect.scaled_pairs || 0)) fail(`${scaledPairs} pairs across time scales, expected ${expect.scaled_pairs || 0}`);
  if (scaledCells !== 3 * scaledPairs) fail(`${scaledCells} marked predicted cells for ${scaledPairs} pairs across time scales`);

  // CDFs: per group one chart per metric, log x, spanning more than the
  // smallest value, holding the group's runs and no other.
  for (const m of ["TTFT", "ITL", "E2EL"]) {
    const per = await page.evaluate((m) => REPORT.groups.map((g, gi) => {
      const u = window.__uplots[`cdf-${gi}-${m}`];
      const runs = REPORT.points.filter((p, i) => p.group === gi && (REPORT.runs[i].cdf[m] || []).length).length;
      return { runs, s: u && { distr: u.scales.x.distr, min: u.scales.x.min, max: u.scales.x.max, series: u.series.length - 1 } };
    }), m);
    let total = 0;
    per.forEach(({ runs, s }, gi) => {
      if (!runs) return;
      if (!s) { fail(`group ${gi}: no ${m} CDF`); return; }
      if (s.distr !== 3) fail(`group ${gi}: ${m} CDF x axis is not logarithmic (distr ${s.distr})`);
      if (!(s.min > 0 && s.max > s.min)) fail(`group ${gi}: ${m} CDF x range ${s.min}..${s.max}`);
      if (s.series !== runs) fail(`group ${gi}: ${m} CDF has ${s.series} runs, expected the group's ${runs}`);
      total += s.series;
    });
    if (m !== "ITL" && total !== expect.runs) fail(`${m} CDFs hold ${total} runs, expected ${expect.runs}`);
  }
  // Percentile bars have a key.
  const keys = await page.evaluate(() => ["TTFT", "ITL", "E2EL"].map(m => document.querySelectorAll(`#pct-${m} .pct-key .key`).length));
  if (keys.some(k => k < 3)) fail(`percentile-bar keys ${keys}`);

  // Per run: requests over time, per-second timeline and server metrics
  // share one x range; ISL/OSL histograms count every profiled request.
  // TTFT and ITL each on a chart of their own; a histogram's steps end at
  // its last bin's right edge and its x range is exactly its bins.
  const runs = await page.evaluate(() => REPORT.runs.map((r, i) => {
    const x = (id) => window.__uplots[id] && [window.__uplots[id].scales.x.min, window.__uplots[id].scales.x.max];
    const hist = (h) => {
      const u = window.__uplots[`run-${i}-${h}`], b = r.hist[h];
      if (!u) return { sum: -1 };
      const counts = u.data[1].slice(0, -1);  // the last value closes the last step
      return { sum: counts.reduce((a, c) => a + (c || 0), 0), x: [u.scales.x.min, u.scales.x.max],
               want: [b.edges[0], b.edges[b.edges.length - 1] + b.width], width: b.width };
    };
    return { requests: x(`run-${i}-requests`), itl: x(`run-${i}-itl`), timeline: x(`run-${i}-timeline`), server: x(`run-${i}-server`),
             isl: hist("ISL"), osl: hist("OSL"), n: REPORT.points[i].requests, tagged: !!document.querySelector(`#run-${i} .tag`),
             warm: r.profiling_start_s, marked: document.querySelector(`#run-${i}-requests .uplot`)?.dataset.warmup };
  }));
  if (runs.length !== expect.runs) fail(`${runs.length} run sections`);
  runs.forEach((r, i) => {
    if (!r.requests || !r.timeline || !r.itl) fail(`run ${i}: missing TTFT, ITL or per-second chart`);
    else if (r.requests[0] !== r.timeline[0] || r.requests[1] !== r.timeline[1] || r.itl[0] !== r.requests[0] || r.itl[1] !== r.requests[1])
      fail(`run ${i}: time axes differ ${r.requests} ${r.itl} ${r.timeline}`);
    if (r.server && (r.server[0] !== r.requests[0] || r.server[1] !== r.requests[1])) fail(`run ${i}: server metrics not aligned`);
    for (const [h, v] of [["ISL", r.isl], ["OSL", r.osl]]) {
      if (v.sum !== r.n) fail(`run ${i}: ${h} histogram counts ${v.sum} of ${r.n} requests`);
      else if (!(v.width > 0) || Math.abs(v.x[0] - v.want[0]) > 1e-9 || Math.abs(v.x[1] - v.want[1]) > 1e-9)
        fail(`run ${i}: ${h} histogram x range ${v.x}, its bins span ${v.want}`);
    }
    if (!r.tagged) fail(`run ${i}: not tagged measured/predicted`);
    // Warmup is shaded on the run's time axis when it had one.
    if (r.warm > 0 && Number(r.marked) !== r.warm) fail(`run ${i}: ${r.warm} s of warmup not marked (${r.marked})`);
  });
  if (!runs.some(r => r.warm > 0)) fail("no run with warmup to check its mark on");
  // A constant length is one narrow bin around its value.
  const constant = await page.evaluate(() => REPORT.runs.map(r => r.hist.ISL).filter(b => b.edges.length === 1)
    .map(b => ({ lo: b.edges[0], hi: b.edges[0] + b.width })));
  for (const c of constant) if (c.hi - c.lo > 0.05 * c.hi) fail(`a constant ISL drawn over ${c.lo}..${c.hi}`);

  // Tooltips: hovering a chart shows the values under the cursor.
  await page.locator("#run-0-timeline .u-over").scrollIntoViewIfNeeded();
  const tipBox = await page.locator("#run-0-timeline .u-over").boundingBox();
  await page.mouse.move(tipBox.x + tipBox.width / 2, tipBox.y + tipBox.height / 2);
  const tip = await page.evaluate(() => { const t = document.querySelector("#run-0-timeline .u-tooltip"); return t && { shown: t.style.display, text: t.textContent }; });
  if (!tip || tip.shown !== "block" || !/completed req\/s: \d/.test(tip.text)) fail(`no tooltip on hover: ${JSON.stringify(tip)}`);
  await page.mouse.move(0, 0);
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

  // Capacity searches: per search its answer, one chart per SLO (measured,
  // interval, predicted, threshold), a table row per measured point.
  const caps = await page.evaluate(() => (REPORT.capacity || []).map((c, ci) => ({
    answer: (document.getElementById(`capacity-${ci}-answer`) || {}).textContent || "",
    charts: c.slos.filter((s, si) => window.__uplots[`capacity-${ci}-slo-${si}`]).length, slos: c.slos.length,
    series: c.slos.map((s, si) => window.__uplots[`capacity-${ci}-slo-${si}`]?.series.length - 1),
    rows: document.querySelectorAll(`#capacity-${ci}-points tr`).length, measured: c.measured.length, capacity: c.capacity,
    hidden: document.getElementById("capacity-section").hidden })));
  if (caps.length !== (expect.capacity || 0)) fail(`${caps.length} capacity searches drawn, expected ${expect.capacity || 0}`);
  caps.forEach((c, ci) => {
    if (c.hidden) fail(`capacity search ${ci}: its section is hidden`);
    if (!new RegExp(`^capacity (at least )?${c.capacity}\\b`).test(c.answer)) fail(`capacity search ${ci}: answer '${c.answer}' for capacity ${c.capacity}`);
    if (c.charts !== c.slos) fail(`capacity search ${ci}: ${c.charts} charts for ${c.slos} SLOs`);
    if (c.series.some(n => n !== 5)) fail(`capacity search ${ci}: chart series ${c.series} (want measured, low, high, predicted, threshold)`);
    if (c.rows !== 1 + c.measured) fail(`capacity search ${ci}: ${c.rows} table rows for ${c.measured} points`);
  });
  if (!caps.length && !(await page.evaluate(() => document.getElementById("capacity-section").hidden)))
    fail("the capacity section shows without a capacity search");
  // Warnings (unexpected cache hits, small samples, wide intervals) are on
  // the page, one item each.
  const warned = await page.evaluate(() => ({ n: REPORT.warnings.length, items: document.querySelectorAll("#warnings li").length }));
  if (warned.items !== warned.n) fail(`${warned.items} warnings on the page, ${warned.n} in the data`);

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
  // At 800 px nothing runs off the page: wide tables scroll in their own box.
  await page.setViewportSize({ width: 800, height: 2000 });
  await page.waitForTimeout(200);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
  if (overflow > 800) fail(`at 800 px the page is ${overflow} px wide`);
  await page.screenshot({ path: join(shotDir, "report-800.png"), fullPage: false });
  await page.setViewportSize({ width: 1400, height: 2000 });
  if (caps.length) await page.locator("#capacity-section").screenshot({ path: join(shotDir, "capacity.png") });
} catch (e) {
  fail(String(e));
} finally {
  await browser.close();
}
if (failed) process.exit(1);
console.log("report renders in chromium");
