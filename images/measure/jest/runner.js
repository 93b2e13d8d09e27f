// polysandbox's in-runner measurement for jest, as a testRunner: `--testRunner
// {measure}/jest/runner.js`. jest-circus's own runner, with measure.js observing its events.
//
// Plain ES5 on purpose: jest loads a testRunner through the project's transform (babel), and
// nothing here gives a transform anything to add (no syntax to lower, no built-in to polyfill).
// measure.js is required when jest calls this function, once jest has removed that transform
// hook: it is loaded as it is.
'use strict';

module.exports = function polysandboxMeasureRunner(globalConfig, config, environment, runtime, testPath, sendMessageToJest) {
  return require(__dirname + '/measure.js').runTests(globalConfig, config, environment, runtime, testPath, sendMessageToJest);
};
