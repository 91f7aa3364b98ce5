#!/usr/bin/env node
// `npm run validate:k8s`: renders every overlay under deploy/k8s/overlays with `kubectl kustomize` and
// checks the output offline, without a cluster:
//   1. against the Kubernetes JSON schemas shipped by the `kubernetes-models` package (types, required
//      fields, formats);
//   2. for unknown fields, which those schemas let through but an API server with strict field validation
//      refuses: TypeScript's excess-property check against the same package's types;
//   3. against this project's rules (deploy/README.md): probes, resources, non-root and read-only
//      containers, an autoscaler, a disruption budget and a Service per component, a default-deny network
//      policy, and every referenced ConfigMap and Secret present.
// Prints one line per overlay and exits 1 if any overlay has a problem.
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const scriptDir = dirname(fileURLToPath(import.meta.url));
const root = join(scriptDir, '..');
const overlaysDir = join(root, 'deploy', 'k8s', 'overlays');
/** The oldest kustomize that renders these overlays (`patches` with label selectors); kubectl 1.27+ has it. */
const MIN_KUSTOMIZE_MAJOR = 5;

function fail(message) {
  process.stderr.write(`validate-k8s: ${message}\n`);
  process.exit(1);
}

async function importOrExplain(name) {
  try {
    return await import(name);
  } catch {
    return fail(`cannot load ${name}; it is a devDependency of this repository: run \`npm ci\` first`);
  }
}

const yaml = await importOrExplain('js-yaml');
const ts = (await importOrExplain('typescript')).default;
await importOrExplain('kubernetes-models/v1/Namespace');

function checkKubectl() {
  let version;
  try {
    version = JSON.parse(execFileSync('kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' }));
  } catch {
    return fail(
      'kubectl is not installed. It renders the kustomize overlays and must embed kustomize ' +
        `v${MIN_KUSTOMIZE_MAJOR} or newer (kubectl 1.27+); Debian's kubernetes-client package (1.20) is too old.`,
    );
  }
  const kustomize = version.kustomizeVersion ?? '';
  const major = Number(/^v(\d+)/.exec(kustomize)?.[1] ?? 0);
  if (major < MIN_KUSTOMIZE_MAJOR) {
    fail(`kubectl ${version.clientVersion?.gitVersion} embeds kustomize ${kustomize || 'of unknown version'}; ` +
      `these overlays need v${MIN_KUSTOMIZE_MAJOR} or newer (kubectl 1.27+).`);
  }
  return `kubectl ${version.clientVersion?.gitVersion}, kustomize ${kustomize}`;
}

function render(overlay) {
  try {
    return execFileSync('kubectl', ['kustomize', overlay], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    throw new Error(`kubectl kustomize failed: ${error.stderr?.toString().trim() || error.message}`);
  }
}

const idOf = (doc) => `${doc.kind}/${doc.metadata?.name}`;

/** `kubernetes-models/<apiVersion>/<Kind>`: the package's module path for a resource type ("v1" is the core group). */
const modelPath = (doc) => `kubernetes-models/${doc.apiVersion}/${doc.kind}`;

/**
 * kustomize wraps the base64 of long generated Secret values over several lines; the API server's decoder
 * skips those newlines, the schema's "byte" format does not.
 */
function normalised(doc) {
  if (doc.kind !== 'Secret' || !doc.data) return doc;
  const data = Object.fromEntries(Object.entries(doc.data).map(([key, value]) => [key, String(value).replace(/\s+/g, '')]));
  return { ...doc, data };
}

/** Step 1: the JSON schema of each resource's apiVersion and kind. */
async function schemaProblems(docs) {
  const problems = [];
  for (const doc of docs) {
    let Model;
    try {
      Model = (await import(modelPath(doc)))[doc.kind];
    } catch {
      problems.push(`${idOf(doc)}: no schema for ${doc.apiVersion} ${doc.kind}`);
      continue;
    }
    try {
      new Model(normalised(doc)).validate();
    } catch (error) {
      const details = error.errors?.map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
      problems.push(`${idOf(doc)}: ${details ?? error.message}`);
    }
  }
  return problems;
}

/**
 * Step 2: every resource as a typed constant in one in-memory TypeScript module beside this script (so that
 * `kubernetes-models` resolves from this repository), type-checked; an unknown field is an excess property.
 */
function unknownFieldProblems(docs) {
  const lines = [];
  const owners = [];
  docs.forEach((doc, index) => {
    lines.push(`import type { I${doc.kind} as T${index} } from '${modelPath(doc)}';`);
  });
  docs.forEach((doc, index) => {
    const body = `export const r${index}: T${index} = ${JSON.stringify(doc, null, 1)};`.split('\n');
    for (let i = 0; i < body.length; i++) owners[lines.length + i] = doc;
    lines.push(...body);
  });
  const fileName = join(scriptDir, '.k8s-manifests.mts');
  const options = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
  };
  const host = ts.createCompilerHost(options);
  const source = lines.join('\n');
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, ...rest) =>
    name === fileName
      ? ts.createSourceFile(name, source, ts.ScriptTarget.ES2022, true)
      : getSourceFile.call(host, name, ...rest);
  host.fileExists = (name) => name === fileName || fileExists.call(host, name);
  host.readFile = (name) => (name === fileName ? source : readFile.call(host, name));
  const program = ts.createProgram([fileName], options, host);
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ');
    if (diagnostic.file?.fileName !== fileName || diagnostic.start === undefined) return message;
    const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
    const owner = owners[line];
    return owner ? `${idOf(owner)}: ${message}` : message;
  });
}

const isTracking = (doc) => doc.metadata?.labels?.['app.kubernetes.io/name'] === 'tracking';

/** Whether a label selector (matchLabels and matchExpressions with In) selects `labels`. */
function selects(selector, labels = {}) {
  if (!selector) return false;
  const matchLabels = selector.matchLabels ?? (selector.matchExpressions ? {} : selector);
  const labelsMatch = Object.entries(matchLabels).every(([key, value]) => labels[key] === value);
  const expressionsMatch = (selector.matchExpressions ?? []).every(
    (expression) => expression.operator === 'In' && expression.values.includes(labels[expression.key]),
  );
  return labelsMatch && expressionsMatch;
}

/** The names of the ConfigMaps and Secrets a pod template refers to. */
function references(podSpec) {
  const configMaps = new Set();
  const secrets = new Set();
  for (const container of [...(podSpec.initContainers ?? []), ...podSpec.containers]) {
    for (const source of container.envFrom ?? []) {
      if (source.configMapRef) configMaps.add(source.configMapRef.name);
      if (source.secretRef) secrets.add(source.secretRef.name);
    }
    for (const variable of container.env ?? []) {
      if (variable.valueFrom?.configMapKeyRef) configMaps.add(variable.valueFrom.configMapKeyRef.name);
      if (variable.valueFrom?.secretKeyRef) secrets.add(variable.valueFrom.secretKeyRef.name);
    }
  }
  for (const volume of podSpec.volumes ?? []) {
    if (volume.configMap) configMaps.add(volume.configMap.name);
    if (volume.secret) secrets.add(volume.secret.secretName);
  }
  return { configMaps, secrets };
}

/** Collects the message of every expectation that does not hold, prefixed with where it was checked. */
function checker(where) {
  const problems = [];
  const expect = (holds, message) => {
    if (!holds) problems.push(`${where}: ${message}`);
  };
  return { problems, expect };
}

function containerProblems(id, container) {
  const { problems, expect } = checker(`${id}: container ${container.name}`);
  const security = container.securityContext ?? {};
  expect(security.readOnlyRootFilesystem === true, 'needs readOnlyRootFilesystem');
  expect(security.allowPrivilegeEscalation === false, 'must not allow privilege escalation');
  expect(security.capabilities?.drop?.includes('ALL'), 'must drop ALL capabilities');
  for (const kind of ['requests', 'limits']) {
    for (const resource of ['cpu', 'memory']) expect(container.resources?.[kind]?.[resource], `has no ${resource} ${kind}`);
  }
  return problems;
}

function podProblems(id, podSpec) {
  const { problems, expect } = checker(id);
  expect(podSpec.securityContext?.runAsNonRoot === true, 'pod must set runAsNonRoot');
  expect(podSpec.securityContext?.seccompProfile?.type === 'RuntimeDefault', 'pod needs the RuntimeDefault seccomp profile');
  expect(podSpec.automountServiceAccountToken === false, 'pod must not mount a service account token');
  return [...problems, ...podSpec.containers.flatMap((container) => containerProblems(id, container))];
}

function probeProblems(id, template) {
  const { problems, expect } = checker(id);
  for (const container of template.spec.containers) {
    const ports = new Map((container.ports ?? []).map((port) => [port.name, port.containerPort]));
    expect(ports.has('metrics'), `container ${container.name} has no port named metrics`);
    const scrapePort = template.metadata?.annotations?.['prometheus.io/port'];
    expect(scrapePort === String(ports.get('metrics')), 'prometheus.io/port is not the metrics port');
    for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
      const port = container[probe]?.httpGet?.port;
      expect(container[probe], `container ${container.name} has no ${probe}`);
      expect(typeof port !== 'string' || ports.has(port), `${probe} names an unknown port ${port}`);
    }
  }
  return problems;
}

function deploymentProblems(deployment, docs) {
  const id = idOf(deployment);
  const { problems, expect } = checker(id);
  const { template } = deployment.spec;
  const podLabels = template.metadata?.labels;
  const has = (kind, test) => docs.some((doc) => doc.kind === kind && test(doc));
  expect(deployment.spec.replicas === undefined, 'sets replicas, which its autoscaler owns');
  expect(template.spec.terminationGracePeriodSeconds !== undefined, 'no terminationGracePeriodSeconds');
  const scales = ({ spec }) => spec.scaleTargetRef.kind === 'Deployment' && spec.scaleTargetRef.name === deployment.metadata.name;
  expect(has('HorizontalPodAutoscaler', scales), 'no HorizontalPodAutoscaler');
  expect(has('PodDisruptionBudget', (pdb) => selects(pdb.spec.selector, podLabels)), 'no PodDisruptionBudget');
  expect(has('Service', (service) => selects(service.spec.selector, podLabels)), 'no Service');
  return [...problems, ...podProblems(id, template.spec), ...probeProblems(id, template)];
}

/** An overlay manages either all of its Secrets (dev) or none of them (prod: created outside the repository). */
function referenceProblems(workload, docs) {
  const { problems, expect } = checker(idOf(workload));
  const named = (kind) => new Set(docs.filter((doc) => doc.kind === kind).map((doc) => doc.metadata.name));
  const configMaps = named('ConfigMap');
  const secrets = named('Secret');
  const refs = references(workload.spec.template.spec);
  for (const name of refs.configMaps) expect(configMaps.has(name), `ConfigMap ${name} is not rendered`);
  for (const name of refs.secrets) expect(secrets.size === 0 || secrets.has(name), `Secret ${name} is not rendered`);
  return problems;
}

const isDefaultDeny = (doc) =>
  doc.kind === 'NetworkPolicy' &&
  Object.keys(doc.spec.podSelector ?? {}).length === 0 &&
  ['Ingress', 'Egress'].every((type) => doc.spec.policyTypes?.includes(type)) &&
  !doc.spec.ingress &&
  !doc.spec.egress;

/** Step 3: this project's rules. */
function ruleProblems(docs) {
  const { problems, expect } = checker('overlay');
  const workloads = docs.filter((doc) => isTracking(doc) && (doc.kind === 'Deployment' || doc.kind === 'Job'));
  expect(workloads.some((doc) => doc.kind === 'Deployment'), 'renders no tracking Deployment');
  expect(docs.some(isDefaultDeny), 'has no default-deny NetworkPolicy');
  for (const doc of docs) expect(doc.kind === 'Namespace' || doc.metadata?.namespace, `${idOf(doc)} has no namespace`);
  for (const workload of workloads) {
    if (workload.kind === 'Deployment') problems.push(...deploymentProblems(workload, docs));
    else problems.push(...podProblems(idOf(workload), workload.spec.template.spec));
    problems.push(...referenceProblems(workload, docs));
  }
  return problems;
}

async function validateOverlay(overlay) {
  const docs = yaml.loadAll(render(overlay)).filter((doc) => doc !== null && doc !== undefined);
  const problems = [...(await schemaProblems(docs)), ...unknownFieldProblems(docs), ...ruleProblems(docs)];
  return { count: docs.length, problems };
}

const tool = checkKubectl();
const overlays = readdirSync(overlaysDir, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => join(overlaysDir, entry.name))
  .sort();
if (overlays.length === 0) fail(`no overlays under ${relative(root, overlaysDir)}`);
let failed = false;
for (const overlay of overlays) {
  const name = relative(root, overlay);
  try {
    const { count, problems } = await validateOverlay(overlay);
    if (problems.length === 0) {
      process.stdout.write(`${name}: ${count} resources, valid\n`);
    } else {
      failed = true;
      process.stdout.write(`${name}: ${problems.length} problem(s)\n${problems.map((p) => `  - ${p}`).join('\n')}\n`);
    }
  } catch (error) {
    failed = true;
    process.stdout.write(`${name}: ${error.message}\n`);
  }
}
process.stdout.write(`(${tool})\n`);
process.exit(failed ? 1 : 0);
