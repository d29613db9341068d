// The layer law of ARCHITECTURE.md, enforced. Ranks: a workspace may import only workspaces of a
// strictly lower rank (so siblings of one rank never import each other), never reach into another
// workspace by a relative path, and never use a package its package.json does not declare.
const ranks = {
  native: -1,
  kernels: 0,
  device: 1,
  memory: 2,
  quant: 3,
  distorch: 4,
  tp: 4,
  models: 4,
  runner: 5,
  bench: 5,
};

const dirOf = (name) => (name === 'native' ? 'native' : ['runner', 'bench'].includes(name) ? `apps/${name}` : `packages/${name}`);
const names = Object.keys(ranks);
// A workspace is reached either by a relative path into its folder or, as everywhere in the real
// tree, by its package name: symlinks are preserved (options below), so `@ninodes/tp` resolves to
// `node_modules/@ninodes/tp/...` and the rules match that path. Without this a package import
// resolved to the real `packages/tp/dist/index.d.ts` and no rank rule ever saw it. The bare name
// covers an import that does not resolve (a package not built yet): it stays a violation.
const target = (list) =>
  `^(${list.map(dirOf).join('|')})/|(^|/)node_modules/@ninodes/(${list.join('|')})/|^@ninodes/(${list.join('|')})($|/)`;

const rankRules = names.map((name) => {
  const forbidden = names.filter((other) => other !== name && ranks[other] >= ranks[name]);
  return {
    name: `layer-${name}`,
    comment: `${name} (rank ${ranks[name]}) may import only lower-ranked workspaces; not ${forbidden.join(', ')}`,
    severity: 'error',
    from: { path: `^${dirOf(name)}/` },
    to: { path: target(forbidden) },
  };
});

module.exports = {
  forbidden: [
    ...rankRules,
    {
      name: 'native-only-through-kernels',
      comment: 'the addon is loaded by @ninodes/kernels and only through it',
      severity: 'error',
      from: { path: '^(packages|apps)/', pathNot: '^packages/kernels/' },
      to: { path: target(['native']) },
    },
    {
      name: 'no-relative-escape',
      comment: 'a workspace reaches another only through its package name, never a relative path',
      severity: 'error',
      from: { path: '^(packages|apps)/([^/]+)/' },
      to: { path: '^(packages|apps|native)/', pathNot: '^$1/$2/' , dependencyTypes: ['local'] },
    },
    {
      name: 'declared-dependencies-only',
      comment: "import only what the workspace's package.json declares",
      severity: 'error',
      from: { path: '^(packages|apps)/' },
      to: { dependencyTypes: ['npm-no-pkg', 'npm-unknown', 'unknown', 'undetermined'] },
    },
    {
      name: 'no-dev-deps-in-runtime-code',
      comment: 'shipped code must not depend on devDependencies',
      severity: 'error',
      from: { path: '^(packages|apps)/[^/]+/src/', pathNot: '\\.test\\.ts$|/test-support/|/testing/' },
      to: { dependencyTypes: ['npm-dev'], pathNot: 'node_modules/@types/' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    // Never cruise into other packages' builds or into node_modules, but keep every edge that
    // points there: the edge is what the rules judge. (Excluding `.d.ts` once dropped every
    // package-name import, since those resolve through the `types` condition.)
    doNotFollow: { path: ['node_modules', '/dist/', '^native/'] },
    tsPreCompilationDeps: true,
    // A workspace's own package.json plus the root's: tests may use the root's devDependencies
    // (vitest, fast-check); no-dev-deps-in-runtime-code keeps them out of shipped code.
    combinedDependencies: true,
    preserveSymlinks: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.cjs', '.mjs', '.json', '.d.ts'],
      mainFields: ['module', 'main', 'types'],
    },
  },
};
