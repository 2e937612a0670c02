// Validates Kubernetes objects against the published schemas, offline: the `kubernetes-models`
// packages carry the Kubernetes OpenAPI schemas and the KEDA and Prometheus Operator CRD schemas,
// compiled. They are ES modules only (and exports "import" only), which jest's CommonJS runtime
// cannot load, so infra/tools/test/schemas.test.ts runs this file with node.
//
// stdin: a JSON array of objects. stdout: a JSON array, one entry per object, in order:
//   { id: "<apiVersion> <kind>/<name>", model: "<package>/<path>" | null, errors: string | null }
// model null: no model package for that apiVersion (the caller decides whether that is allowed).
// Limitation of these schemas: they check types, formats, patterns, enums and required fields, not
// unknown fields (no additionalProperties: false), unlike the API server's strict field validation.

/** apiVersion → the module holding its models; core `v1` and `apps/v1`-style groups from kubernetes-models. */
const GROUPS = [
  [/^keda\.sh\/(.+)$/, (v) => `@kubernetes-models/keda/keda.sh/${v}`],
  [/^monitoring\.coreos\.com\/(.+)$/, (v) => `@kubernetes-models/prometheus-operator/monitoring.coreos.com/${v}`],
  [/^(v1)$/, (v) => `kubernetes-models/${v}`],
  [
    /^((?:apps|batch|policy|autoscaling|networking\.k8s\.io|rbac\.authorization\.k8s\.io|storage\.k8s\.io|scheduling\.k8s\.io|coordination\.k8s\.io)\/.+)$/,
    (v) => `kubernetes-models/${v}`,
  ],
];

async function modelFor(apiVersion, kind) {
  for (const [re, path] of GROUPS) {
    const m = re.exec(apiVersion);
    if (!m) continue;
    const specifier = path(m[1]);
    const mod = await import(specifier);
    if (typeof mod[kind] !== 'function') throw new Error(`${specifier} has no model ${kind}`);
    return { specifier, Model: mod[kind] };
  }
  return undefined;
}

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const docs = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const results = [];
for (const doc of docs) {
  const id = `${doc.apiVersion} ${doc.kind}/${doc.metadata?.name}`;
  const found = await modelFor(doc.apiVersion, doc.kind);
  if (!found) {
    results.push({ id, model: null, errors: null });
    continue;
  }
  let errors = null;
  try {
    new found.Model(doc).validate();
  } catch (err) {
    errors = err instanceof Error ? err.message : String(err);
  }
  results.push({ id, model: `${found.specifier}/${doc.kind}`, errors });
}
process.stdout.write(JSON.stringify(results));
