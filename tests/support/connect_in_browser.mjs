// A person going through the Connect flow in a real browser: Debian's
// chromium, headless, driven over the DevTools protocol (puppeteer-core).
//
//   node connect_in_browser.mjs <Connect link> <login> <callback URL>
// Environment: BROWSER_MODULES (node_modules holding puppeteer-core),
// CHROMIUM (the browser). Opens the link, signs in as <login> and consents
// on the provider's own pages, and prints one JSON line once the browser
// lands on the callback: its URL, status, title and text, and the pages
// it went through.
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.join(process.env.BROWSER_MODULES, 'index.js'));
const puppeteer = require('puppeteer-core');
const [link, login, callback] = process.argv.slice(2);

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM,
  headless: true,
  // Root in a container: no sandbox; no GPU, a small /dev/shm.
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage();
  const through = [];
  let response = await page.goto(link, { waitUntil: 'load' });
  for (let i = 0; i < 4 && !page.url().startsWith(callback); i++) {
    const submit = () => Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('button[type=submit]')]);
    if (await page.$('input[name=login]')) {
      through.push('sign-in');
      await page.type('input[name=login]', login);
      await page.type('input[name=password]', 'any password');
      [response] = await submit();
    } else if (await page.$('input[name=prompt][value=consent]')) {
      through.push('consent');
      [response] = await submit();
    } else {
      throw new Error(`neither sign-in nor consent at ${page.url()}: ${await page.content()}`);
    }
  }
  const text = await page.$eval('body', (body) => body.innerText);
  console.log(JSON.stringify({
    url: page.url(), status: response.status(), title: await page.title(), text, through,
  }));
} finally {
  await browser.close();
}
