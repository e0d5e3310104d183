import { createServer } from 'node:http';

/**
 * An OTLP/HTTP endpoint that accepts span exports and discards them (an empty protobuf
 * ExportTraceServiceResponse): what a benchmark points OTEL_EXPORTER_OTLP_ENDPOINT at, so it measures
 * the cost of making and exporting spans in rstar's processes, not the cost of a collector sharing the
 * machine. Counts requests and bytes received.
 */
export async function startOtlpSink(): Promise<{ url: string; requests: () => number; bytes: () => number; close(): Promise<void> }> {
  let requests = 0;
  let bytes = 0;
  const srv = createServer((req, res) => {
    req.on('data', (b: Buffer) => (bytes += b.length));
    req.on('end', () => {
      requests++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => requests,
    bytes: () => bytes,
    close: () => new Promise<void>((r) => srv.close(() => r())),
  };
}
