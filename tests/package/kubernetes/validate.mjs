// Validates every object of rendered Kubernetes manifests (YAML files, `---` separated) with
// kubernetes-models: JSON schemas generated from Kubernetes 1.27.1's OpenAPI (types, required
// fields, enums, formats), and @kubernetes-models/cert-manager for cert-manager.io/v1. An object
// whose apiVersion/kind neither package knows is an error, not skipped.
//   node validate.mjs FILE...      (run from the folder holding node_modules)
// Prints one line per object; exits 1 when any object is invalid.
import { readFileSync } from "node:fs";
import yaml from "js-yaml";

const kubernetesVersion = "1.27.1"; // kubernetes-models 5.1.0's README and badge

function modulePath(apiVersion, kind) {
  if (apiVersion.startsWith("cert-manager.io/")) {
    return `@kubernetes-models/cert-manager/${apiVersion}/${kind}`;
  }
  return `kubernetes-models/${apiVersion}/${kind}`;
}

let bad = 0;
let count = 0;
for (const file of process.argv.slice(2)) {
  const docs = yaml.loadAll(readFileSync(file, "utf8")).filter((d) => d != null);
  for (const doc of docs) {
    count++;
    const what = `${file}: ${doc.kind ?? "?"} ${doc.metadata?.name ?? "?"}`;
    if (typeof doc.apiVersion !== "string" || typeof doc.kind !== "string") {
      console.log(`INVALID ${what}: no apiVersion/kind`);
      bad++;
      continue;
    }
    let Model;
    try {
      Model = (await import(modulePath(doc.apiVersion, doc.kind)))[doc.kind];
    } catch (e) {
      console.log(`INVALID ${what}: ${doc.apiVersion} ${doc.kind} is no kind the schemas know`);
      bad++;
      continue;
    }
    try {
      new Model(doc).validate();
      console.log(`valid   ${what} (${doc.apiVersion})`);
    } catch (e) {
      console.log(`INVALID ${what}: ${e.message}`);
      bad++;
    }
  }
}
console.log(
  `${count} objects, ${bad} invalid (Kubernetes ${kubernetesVersion} OpenAPI schemas, kubernetes-models)`,
);
process.exit(bad === 0 && count > 0 ? 0 : 1);
