// A real OpenID provider (the npm package `oidc-provider`, certified) for
// the per-user sign-in tests, and an API that accepts only its tokens.
//
//   node oidc_provider.mjs
// Environment: OIDC_PROVIDER_MODULES (node_modules holding oidc-provider),
// REDIRECT_URI, CLIENT_SECRET, ACCESS_TOKEN_SECS.
// Listens on a port the system picks (no port is chosen first and released,
// which another test's server could take in between) and prints
// "listening <issuer>" once it accepts connections.
//
// MCP servers' tokens (asked for with `resource`) are checked at its
// introspection endpoint (`/token/introspection`) by the confidential client.
//
// Sign-in uses the package's own development pages: any login name signs
// in as that account, then a consent page. Its UserInfo endpoint (`/me`)
// is the protected API of the tests: it accepts only this provider's
// access tokens.
import { pathToFileURL } from 'node:url';
import http from 'node:http';
import path from 'node:path';

const modules = process.env.OIDC_PROVIDER_MODULES;
const { default: Provider, errors } = await import(pathToFileURL(path.join(modules, 'oidc-provider', 'lib', 'index.js')));

// The issuer names the port, so the server listens before the provider exists.
const server = http.createServer();
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(0, '127.0.0.1', resolve);
});
const issuer = `http://127.0.0.1:${server.address().port}`;
const provider = new Provider(issuer, {
  clients: [{
    client_id: 'slack-assistant',
    client_secret: process.env.CLIENT_SECRET,
    redirect_uris: [process.env.REDIRECT_URI],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    scope: 'openid offline_access',
  }],
  scopes: ['openid', 'offline_access'],
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: true },
    revocation: { enabled: true },
    // Dynamic client registration (RFC 7591), as MCP servers' providers offer.
    registration: { enabled: true },
    // RFC 8707: a token asked for a resource (a test MCP server on
    // loopback) is for that resource alone, which checks it by
    // introspection; tokens asked for no resource are for UserInfo.
    resourceIndicators: {
      enabled: true,
      getResourceServerInfo: async (ctx, resource) => {
        if (!resource.startsWith('http://127.0.0.1:')) throw new errors.InvalidTarget();
        return { scope: 'openid offline_access', accessTokenFormat: 'opaque', audience: resource };
      },
      useGrantedResource: async () => true,
    },
    introspection: { enabled: true },
  },
  // Refresh tokens rotate: a used one is spent.
  rotateRefreshToken: true,
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
  ttl: {
    AccessToken: Number(process.env.ACCESS_TOKEN_SECS || 3600),
    RefreshToken: 24 * 3600,
    Interaction: 600,
    Session: 3600,
    Grant: 24 * 3600,
    IdToken: 3600,
    AuthorizationCode: 60,
  },
  findAccount: async (ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
});
// Plain http on loopback: the tests' provider is not on the internet.
provider.proxy = false;

server.on('request', provider.callback());
console.log(`listening ${issuer}`);
