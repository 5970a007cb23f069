// Boots parse-server for parse-mcp's tests. Go (internal/parsetest) writes this
// file next to the test's Cloud Code and passes the settings as JSON in
// PARSETEST_CONFIG. The HTTP server listens on an ephemeral loopback port first,
// so there is no port race between concurrent test processes; the chosen port
// is printed as "PARSETEST_READY <port>" once Parse Server has started.
'use strict';
const http = require('http');
const express = require('express');
const { ParseServer } = require('parse-server');

const cfg = JSON.parse(process.env.PARSETEST_CONFIG);

async function main() {
  let app = (req, res) => { res.statusCode = 503; res.end('starting'); };
  const httpServer = http.createServer((req, res) => app(req, res));
  await new Promise((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(0, '127.0.0.1', resolve);
  });
  const port = httpServer.address().port;
  const serverURL = `http://127.0.0.1:${port}/parse`;

  const options = {
    databaseURI: cfg.databaseURI,
    appId: cfg.appId,
    masterKey: cfg.masterKey,
    masterKeyIps: ['0.0.0.0/0', '::/0'],
    serverURL,
    cloud: cfg.cloud,
    allowClientClassCreation: false,
    enforcePrivateUsers: true,
    // Neither FerretDB 1.24 nor FerretDB 2.7 on DocumentDB (the second test
    // engine) supports collation — in find ("collation is not supported in
    // the find command yet": sign-up fails) or in createIndex (boot fails):
    // compare case in memory and skip the case-insensitive user indexes.
    enableCollationCaseComparison: true,
    databaseOptions: {
      createIndexUserEmailCaseInsensitive: false,
      createIndexUserUsernameCaseInsensitive: false,
    },
    verifyServerUrl: false,
    // Cloud Code's Parse SDK calls go over HTTP to serverURL: 9.10's
    // direct-access router fails to match routes ("Cannot convert undefined
    // or null to object" in PromiseRouter.match).
    directAccess: false,
    logLevel: cfg.logLevel || 'warn',
    silent: !cfg.verbose,
  };
  if (cfg.liveQueryClasses && cfg.liveQueryClasses.length) {
    options.liveQuery = { classNames: cfg.liveQueryClasses };
  }
  const api = new ParseServer(options);

  // FerretDB 1.24 cannot build the TTL index on _Idempotency.expire; Parse
  // rethrows that during initialization although the index is only a
  // clean-up aid. Tolerate exactly that failure (DocumentDB builds it).
  const adapter = api.config.databaseController.adapter;
  const ensureIndex = adapter.ensureIndex.bind(adapter);
  adapter.ensureIndex = (className, schema, fieldNames, indexName, ...rest) =>
    ensureIndex(className, schema, fieldNames, indexName, ...rest).catch(err => {
      if (className === '_Idempotency' && indexName === 'ttl') return;
      throw err;
    });

  await api.start();
  const exp = express();
  exp.use('/parse', api.app);
  app = exp;
  if (options.liveQuery) {
    await ParseServer.createLiveQueryServer(httpServer, {
      appId: cfg.appId,
      masterKey: cfg.masterKey,
      serverURL,
      logLevel: options.logLevel,
    }, options);
  }
  process.stdout.write(`PARSETEST_READY ${port}\n`);

  const stop = () => {
    httpServer.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // The Go test owns this process: when its stdin closes (the test binary
  // died), exit instead of lingering.
  process.stdin.on('end', stop);
  process.stdin.resume();
}

main().catch(err => {
  console.error('PARSETEST_FAILED', err && err.stack ? err.stack : err);
  process.exit(1);
});
