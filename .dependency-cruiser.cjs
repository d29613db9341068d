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

const rankRules = names.map((name) => {
  const forbidden = names.filter((other) => other !== name && ranks[other] >= ranks[name]);
  return {
    name: `layer-${name}`,
    comment: `${name} (rank ${ranks[name]}) may import only lower-ranked workspaces; not ${forbidden.join(', ')}`,
    severity: 'error',
    from: { path: `^${dirOf(name)}/` },
    to: { path: `^(${forbidden.map(dirOf).join('|')})/` },
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
      to: { path: '^native/' },
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
      from: { path: '^(packages|apps)/[^/]+/src/', pathNot: '\\.test\\.ts$|/test-support/' },
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
    doNotFollow: { path: ['node_modules', '/dist/', '^native/'] },
    exclude: { path: ['\\.d\\.c?ts$'] },
    tsPreCompilationDeps: true,
    combinedDependencies: false,
    preserveSymlinks: false,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.cjs', '.mjs', '.json', '.d.ts'],
      mainFields: ['module', 'main', 'types'],
    },
  },
};
