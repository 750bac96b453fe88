// Loads a profile into speedscope's own page (its npm package's web
// build) in headless Chromium, as a user does with its Browse button, and
// saves what speedscope made of it with its Export button.
//
//   node check.js PROFILE EXPORT.json
//
// Prints one JSON line: the page's console warnings and errors (speedscope
// warns about every begin or end it cannot pair) and uncaught errors.
// Exits 1 when the page could not import the profile. Chromium is
// /usr/bin/chromium unless CHROMIUM names another.
'use strict';
const path = require('path');
const { chromium } = require('playwright-core');

async function main() {
  const [profile, exported] = process.argv.slice(2);
  if (!profile || !exported) {
    console.error('usage: node check.js PROFILE EXPORT.json');
    process.exit(2);
  }
  const page_file = path.join(__dirname, 'node_modules', 'speedscope', 'dist', 'release', 'index.html');
  const profileDir = require('fs').mkdtempSync(path.join(require('os').tmpdir(), 'speedscope-chromium-'));
  const browser = await chromium.launchPersistentContext(profileDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    acceptDownloads: true,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run',
    ],
  });
  const messages = [];
  const errors = [];
  try {
    const page = await browser.newPage();
    page.on('console', (m) => {
      const t = m.type();
      // WebGL driver notes are the headless GPU's, not speedscope's.
      if ((t === 'warning' || t === 'error') && !m.text().includes('GL Driver Message')) {
        messages.push(m.text());
      }
    });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto('file://' + page_file);
    await page.setInputFiles('input[type=file]', profile);
    const exportButton = page.getByText('Export');
    await exportButton.waitFor({ timeout: 120000 });
    const [download] = await Promise.all([
      page.waitForEvent('download', { timeout: 120000 }),
      exportButton.click(),
    ]);
    await download.saveAs(exported);
  } catch (e) {
    errors.push(String(e && e.message ? e.message : e));
  } finally {
    await browser.close();
    require('fs').rmSync(profileDir, { recursive: true, force: true });
  }
  console.log(JSON.stringify({ warnings: messages, errors }));
  process.exit(errors.length > 0 ? 1 : 0);
}

main();
