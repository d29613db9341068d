#!/usr/bin/env node
console.log("ninodes");
