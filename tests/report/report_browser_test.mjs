// Loads a generated report in headless Debian chromium (playwright-core),
// checks that the charts rendered with the right number of points, and
// saves a screenshot.
// usage: node report_browser_test.mjs NODE_MODULES_DIR REPORT.html EXPECTED_POINTS EXPECTED_RUNS EXPECTED_CHARTS SCREENSHOT.png
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";

const [modules, report, expectedPoints, expectedRuns, expectedCharts, screenshot] = process.argv.slice(2);
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
  const state = await page.evaluate(() => window.__report);
  const canvases = await page.locator("canvas").count();
  const rows = await page.locator("#points tr").count();
  console.log(JSON.stringify({ state, canvases, rows }));
  if (errors.length) fail("page errors: " + errors.join("; "));
  if (state.points !== Number(expectedPoints)) fail(`pareto has ${state.points} points, expected ${expectedPoints}`);
  if (state.frontier < 1 || state.frontier > state.points) fail(`frontier of ${state.frontier} points`);
  // 1 Pareto chart + per run a CDF, a timeline and a lane canvas, + a
  // server-metrics chart per run that scraped them.
  if (state.charts !== Number(expectedCharts)) fail(`${state.charts} charts, expected ${expectedCharts}`);
  if (canvases < Number(expectedCharts)) fail(`${canvases} canvases`);
  if (rows !== 1 + Number(expectedRuns)) fail(`${rows} table rows`);
  // Switching the percentile and axis re-renders the frontier.
  await page.selectOption("#pct", "p90");
  await page.selectOption("#xaxis", "e2e");
  const after = await page.evaluate(() => window.__report);
  if (after.points !== Number(expectedPoints)) fail(`after switching: ${after.points} points`);
  await page.screenshot({ path: screenshot, fullPage: true });
} catch (e) {
  fail(String(e));
} finally {
  await browser.close();
}
if (failed) process.exit(1);
console.log("report renders in chromium");
