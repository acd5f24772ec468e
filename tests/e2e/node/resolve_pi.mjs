// Loaded with `node --import`: resolves the packages pi provides to its extensions
// (@earendil-works/*, typebox) from the e2e cache's pi install (PI_NODE_MODULES),
// as pi itself does when it loads the extension.
import { registerHooks } from "node:module";
import { pathToFileURL } from "node:url";

const piModules = process.env.PI_NODE_MODULES;
if (!piModules) throw new Error("PI_NODE_MODULES (pi's node_modules directory) is not set");
const fromPi = pathToFileURL(`${piModules.replace(/\/$/, "")}/`).href;
const provided = /^(@earendil-works\/|typebox(\/|$))/;

registerHooks({
	resolve(specifier, context, nextResolve) {
		if (provided.test(specifier)) return nextResolve(specifier, { ...context, parentURL: fromPi });
		return nextResolve(specifier, context);
	},
});
