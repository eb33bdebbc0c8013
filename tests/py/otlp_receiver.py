"""An OTLP/HTTP (protobuf) receiver on 127.0.0.1 for tests/cli_otlp_python.rs.

Decodes what arrives at /v1/traces and /v1/metrics with the official
`opentelemetry-proto` package (PyPI) and appends one JSON line per span and
per metric data point to the file named by its first argument, flushed
before the request is answered (so an exporter that got its answer finds
its data in the file). Prints `PORT <n>` on stdout once it listens.

Usage: python otlp_receiver.py OUT.jsonl
"""

import gzip
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

OUT = open(sys.argv[1], "a", encoding="utf-8")


def value(v):
    """An AnyValue as plain JSON."""
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind)


def attrs(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


def spans(body):
    req = trace_service_pb2.ExportTraceServiceRequest()
    req.ParseFromString(body)
    for rs in req.resource_spans:
        resource = attrs(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                yield {
                    "kind": "span",
                    "name": s.name,
                    "trace_id": s.trace_id.hex(),
                    "span_id": s.span_id.hex(),
                    "parent_span_id": s.parent_span_id.hex(),
                    "attributes": attrs(s.attributes),
                    "status": {"code": int(s.status.code), "message": s.status.message},
                    "service": resource.get("service.name"),
                }


def points(body):
    req = metrics_service_pb2.ExportMetricsServiceRequest()
    req.ParseFromString(body)
    for rm in req.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                data = m.WhichOneof("data")
                for p in getattr(m, data).data_points if data else []:
                    if data == "histogram":
                        v = {"count": p.count, "sum": p.sum}
                    elif p.WhichOneof("value") == "as_int":
                        v = {"value": p.as_int}
                    else:
                        v = {"value": p.as_double}
                    yield {
                        "kind": "metric",
                        "name": m.name,
                        "type": data,
                        "unit": m.unit,
                        "attributes": attrs(p.attributes),
                        **v,
                    }


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if self.path == "/v1/traces":
            decoded, reply = spans(body), trace_service_pb2.ExportTraceServiceResponse()
        elif self.path == "/v1/metrics":
            decoded, reply = points(body), metrics_service_pb2.ExportMetricsServiceResponse()
        else:
            self.send_error(404)
            return
        try:
            lines = [json.dumps(d) for d in decoded]
        except Exception as e:  # a body that is not OTLP: say so in the file
            lines = [json.dumps({"kind": "undecodable", "path": self.path, "error": str(e)})]
        OUT.write("".join(line + "\n" for line in lines))
        OUT.flush()
        payload = reply.SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"PORT {server.server_address[1]}", flush=True)
server.serve_forever()
