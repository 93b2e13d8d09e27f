// polysandbox's in-runner measurement for jest: one JSON line per test.
//
// For each test it reads the kernel's counters for the process that runs the test file (jest's
// own process when it runs in band, else one of its workers) at the test's start and at its end,
// and writes one line to the file named by POLYSANDBOX_MEASURE (the host's FIFO):
//
//   {"test": NAME, "wall_s": ..., "cpu_user_s": ..., "cpu_system_s": ..., "memory_peak_bytes": ...,
//    "method": "in-runner", "cpu_clock": "process", "memory": "vmhwm"}
//
// NAME is the test's fullName in jest's --json report (describe titles and the test's title,
// joined by spaces). CPU is process.cpuUsage() (getrusage(RUSAGE_SELF): every thread of the
// process, V8's compiler and GC threads included), wall performance.now() of perf_hooks, memory
// VmHWM after writing "5" to /proc/self/clear_refs.
//
// Two ways in:
//  - runner.js (what images/*.toml use: `--testRunner {measure}/jest/runner.js`) calls
//    runTests() below, outside the test environment: jest-circus's own runner, with an observer
//    of its events (test_started .. test_done: the test's beforeEach hooks, body and afterEach
//    hooks). It leaves the project's setupFilesAfterEnv and testEnvironment alone (a
//    --setupFilesAfterEnv on the command line replaces the config's, see README.md).
//  - as a setupFilesAfterEnv file: a top-level beforeEach and afterEach, inside the test
//    environment (for a project without setup files of its own, or one that lists this file).
//
// Without POLYSANDBOX_MEASURE it does nothing; its own failures are swallowed: it never changes a
// test's outcome, jest's output or its report. The code under test runs in the same process and
// can distort these numbers: they are measurements, not verdicts.
'use strict';

// A recorder bound to the functions it is given (taken when jest loads it: a test may mock or
// replace them later), or null without POLYSANDBOX_MEASURE.
function recorder(env, fs, perf, cpuUsage, resolvePath) {
  let target = env.POLYSANDBOX_MEASURE;
  if (!target) return null;
  target = resolvePath(target); // before a test can chdir
  const { openSync, writeSync, closeSync, readFileSync } = fs;
  const { O_WRONLY, O_APPEND, O_NONBLOCK } = fs.constants;
  const now = perf.now.bind(perf);
  const stringify = JSON.stringify;
  const byteLength = Buffer.byteLength;
  const pause = new Int32Array(new SharedArrayBuffer(4));

  function resetPeak() {
    try {
      const fd = openSync('/proc/self/clear_refs', O_WRONLY);
      try {
        return writeSync(fd, '5') === 1;
      } finally {
        closeSync(fd);
      }
    } catch (e) {
      return false;
    }
  }

  function vmhwmBytes() {
    const m = /^VmHWM:\s*(\d+)\s*kB/m.exec(readFileSync('/proc/self/status', 'latin1'));
    return m ? Number(m[1]) * 1024 : null;
  }

  function writeLine(line) {
    if (byteLength(line) >= 4096) return;
    // Non-blocking: a FIFO nobody reads fails to open (ENXIO) instead of hanging the test. A
    // write of < PIPE_BUF bytes is whole or nothing (EAGAIN while the host catches up: retried).
    const fd = openSync(target, O_WRONLY | O_APPEND | O_NONBLOCK);
    try {
      for (let tries = 0; ; tries++) {
        try {
          writeSync(fd, line);
          return;
        } catch (e) {
          if (e.code !== 'EAGAIN' || tries >= 2000) return;
          Atomics.wait(pause, 0, 0, 1);
        }
      }
    } finally {
      closeSync(fd);
    }
  }

  let current = null;
  const round = (x) => Math.round(Math.max(x, 0) * 1e6) / 1e6;

  return {
    start(name) {
      current = null;
      try {
        if (typeof name !== 'string') return;
        const reset = resetPeak();
        const cpu = cpuUsage();
        current = { name, reset, wall: now(), cpu };
      } catch (e) {
        current = null;
      }
    },
    cancel() {
      current = null;
    },
    finish() {
      try {
        const wall = now();
        const cpu = cpuUsage();
        const s = current;
        current = null;
        if (!s) return;
        const peak = vmhwmBytes();
        if (peak === null) return;
        writeLine(
          stringify({
            test: s.name,
            wall_s: round((wall - s.wall) / 1e3),
            cpu_user_s: round((cpu.user - s.cpu.user) / 1e6),
            cpu_system_s: round((cpu.system - s.cpu.system) / 1e6),
            memory_peak_bytes: peak,
            method: 'in-runner',
            cpu_clock: 'process',
            memory: s.reset ? 'vmhwm' : 'vmhwm-unreset',
          }) + '\n',
        );
      } catch (e) {
        // never the test's business
      }
    },
  };
}

// The test's fullName, as jest-circus makes it: its title and its describe blocks' (the root
// block, the one without a parent, left out), joined by spaces.
function fullName(test) {
  const titles = [];
  for (let b = test; b && b.parent; b = b.parent) titles.unshift(b.name);
  return titles.join(' ');
}

// The testRunner (through runner.js): jest-circus's runner, as jest would have run it, with an
// observer of its events added to the test environment's.
function runTests(globalConfig, config, environment, runtime, testPath, sendMessageToJest) {
  const path = require('path');
  // The jest-circus jest itself would have taken (jest-config resolves its default runner from
  // its own directory): from the jest packages this process runs, else from the project.
  const loaded = Object.keys(require.cache);
  const near = (pkg) => {
    const f = loaded.find((p) => p.includes(`${path.sep}${pkg}${path.sep}build${path.sep}`));
    return f ? [path.dirname(f)] : [];
  };
  const from = [...near('jest-config'), ...near('jest-runner'), config.rootDir, process.cwd()];
  if (require.main && require.main.filename) from.push(path.dirname(require.main.filename));
  const circus = require(require.resolve('jest-circus/runner', { paths: from }));
  const run = circus && circus.__esModule ? circus.default : circus;
  try {
    const rec = recorder(process.env, require('fs'), require('perf_hooks').performance, process.cpuUsage, path.resolve);
    if (rec) {
      const own = environment.handleTestEvent;
      environment.handleTestEvent = function polysandboxMeasure(event, state) {
        try {
          switch (event.name) {
            case 'test_start': // jest < 29.? has no test_started
            case 'test_started': // the test runs: its beforeEach hooks are next
              rec.start(fullName(event.test));
              break;
            case 'test_skip':
            case 'test_todo':
              rec.cancel();
              break;
            case 'test_done': // after its afterEach hooks
              rec.finish();
              break;
          }
        } catch (e) {
          // never the test's business
        }
        return own ? own.call(this, event, state) : undefined;
      };
    }
  } catch (e) {
    // jest runs as it would have
  }
  return run(globalConfig, config, environment, runtime, testPath, sendMessageToJest);
}

// As a setupFilesAfterEnv file: hooks in the test environment. Hooks exist only there (the
// globals, or @jest/globals under injectGlobals: false); required by runner.js, this is skipped.
function setupFile() {
  let api;
  let rec;
  try {
    api =
      typeof beforeEach === 'function' && typeof afterEach === 'function' && typeof expect !== 'undefined'
        ? { beforeEach, afterEach, beforeAll, expect }
        : require('@jest/globals');
    if (!api || typeof api.beforeEach !== 'function') return;
    // The environment's process and fs are the real process's functions; perf_hooks is not
    // replaced by jest's fake timers (which replace the environment's performance global).
    rec = recorder(process.env, require('fs'), require('perf_hooks').performance, process.cpuUsage, require('path').resolve);
    if (!rec) return;
  } catch (e) {
    return;
  }
  const start = () => {
    try {
      rec.start(api.expect.getState().currentTestName);
    } catch (e) {
      rec.cancel();
    }
  };
  const finish = () => rec.finish();
  try {
    // Ours is the first beforeEach of every test (parents' first, in the order declared).
    api.beforeEach(start);
    api.afterEach(finish);
    // Root afterEach hooks run in the order declared: ours would run before the test file's own.
    // Once the file is collected, move it last (jest-circus keeps its state on the
    // environment's global; should that change, ours stays first).
    api.beforeAll(function polysandboxMeasureLast() {
      try {
        const state = globalThis[Symbol.for('JEST_STATE_SYMBOL')];
        const hooks = state && state.rootDescribeBlock && state.rootDescribeBlock.hooks;
        if (!Array.isArray(hooks)) return;
        const i = hooks.findIndex((h) => h && h.type === 'afterEach' && h.fn === finish);
        if (i >= 0 && i !== hooks.length - 1) hooks.push(hooks.splice(i, 1)[0]);
      } catch (e) {
        // stays first
      }
    });
  } catch (e) {
    // never the test's business
  }
}

setupFile();
module.exports = { runTests, recorder, fullName };
