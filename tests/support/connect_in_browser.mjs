// A person going through the Connect flow in a real browser: Debian's
// chromium, headless, driven over the DevTools protocol (puppeteer-core).
//
//   node connect_in_browser.mjs <Connect link> <login> <callback URL>
// Environment: BROWSER_MODULES (node_modules holding puppeteer-core),
// CHROMIUM (the browser). Each run is a browser of its own (a fresh
// profile: its own cookies). Opens the link (the bot's start page, which
// may wait for the person's click to reach the bot), signs in as <login>
// and consents on the provider's own pages, and lands on the callback.
// Prints one JSON line per page the bot showed (its URL, status, title and
// text, and the provider's pages it went through): on landing, and again
// once the page stops reloading itself. A page of the bot's that refuses
// ends the run there.
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.join(process.env.BROWSER_MODULES, 'index.js'));
const puppeteer = require('puppeteer-core');
const [link, login, callback] = process.argv.slice(2);
const bot = new URL(link).origin;
// Pages of the bot's that reload themselves until something happens elsewhere.
const waiting = ['Waiting for your click', 'Finishing your sign-in'];

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
  const report = async () => console.log(JSON.stringify({
    url: page.url(), status: response ? response.status() : 0, title: await page.title(),
    text: await page.$eval('body', (body) => body.innerText), through,
  }));
  // The bot's own reloading page: wait for it to go on (a reload, or a redirect).
  const reloads = async () => {
    for (let i = 0; i < 60 && waiting.includes(await page.title()); i++) {
      response = (await page.waitForNavigation({ waitUntil: 'load', timeout: 60000 })) || response;
    }
  };
  for (let i = 0; i < 8 && !page.url().startsWith(callback); i++) {
    const submit = () => Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('button[type=submit]')]);
    if (page.url().startsWith(bot) && waiting.includes(await page.title())) {
      await reloads();
    } else if (page.url().startsWith(bot)) {
      break; // a refusal of the bot's
    } else if (await page.$('input[name=login]')) {
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
  await report();
  if (page.url().startsWith(callback) && waiting.includes(await page.title())) {
    await reloads();
    await report();
  }
} finally {
  await browser.close();
}
