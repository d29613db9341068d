#!/usr/bin/env node
console.log("bench");
