// The README's Dagster screenshots, taken from a running dagster-webserver (docs/make_screenshots.py starts it).
// Usage: node shoot.mjs <webserver url> <output folder>
// Debian's /usr/bin/chromium only: playwright-core never downloads a browser. The flags keep Chromium off the
// network (this machine's closed network refuses its background connections).
import { chromium } from 'playwright-core';

const [url, out] = process.argv.slice(2);
const CHROMIUM_FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const LOAD_ID = /^\d+\.\d+$/;  // demo load IDs: epoch seconds with microseconds
const SETTLE_MS = 3000;  // the graph's edges and status rows render after the data arrives

async function skipCommunityDialog(page) {
  const skip = page.getByRole('button', { name: 'Skip' });
  if (await skip.isVisible()) await skip.click();
}

async function shot(page, name) {
  await page.waitForTimeout(SETTLE_MS);
  await skipCommunityDialog(page);
  await page.screenshot({ path: `${out}/${name}` });
  console.log(`wrote ${out}/${name}`);
}

// Global asset lineage: every asset of the source with its partitions, checks and observations. The navigation
// is hidden, then the page reloaded: the graph fits its zoom to the room it has at load, and below a zoom level
// Dagster draws bare name boxes instead of nodes with their status rows (hence also the wide viewport).
async function assetGraph(page) {
  await page.goto(`${url}/asset-groups`);
  await page.getByText('orders__line_items__discounts').filter({ visible: true }).first().waitFor();
  await page.waitForTimeout(SETTLE_MS);
  await skipCommunityDialog(page);
  await page.getByText('Hide navigation').click();
  await page.reload();
  await page.getByText(/% filled$/).filter({ visible: true }).first().waitFor();
  await page.getByText(/^Observed$/).filter({ visible: true }).first().waitFor();
  await shot(page, 'dagster_asset_graph.png');
}

// One partition (load) of a current table: the metadata of that load alone.
async function partitionMetadata(page) {
  await page.goto(`${url}/assets/shop/orders?view=partitions`);
  await page.locator('span', { hasText: LOAD_ID }).nth(1).click();
  await page.getByText('dagster/partition_row_count').waitFor();
  await shot(page, 'dagster_partition_metadata.png');
}

// A per-load check of a raw table, tied to its partition.
async function perLoadCheck(page) {
  await page.goto(`${url}/assets/shop/_norm_raw_orders?view=checks`);
  await page.getByText('quarantined_lines').waitFor();
  await shot(page, 'dagster_check_per_load.png');
}

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_FLAGS });
try {
  const graphPage = await browser.newPage({ viewport: { width: 1500, height: 900 }, deviceScaleFactor: 1.25 });
  await assetGraph(graphPage);
  const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
  await partitionMetadata(page);
  await perLoadCheck(page);
} finally {
  await browser.close();
}
