// Loaded with NODE_OPTIONS=--require: js-ipfs 0.66 (via newer libp2p deps) calls Promise.withResolvers,
// which Node < 22 lacks. Harmless where it exists.
if (typeof Promise.withResolvers !== 'function') {
  Promise.withResolvers = function () {
    let resolve, reject;
    const promise = new this((res, rej) => { resolve = res; reject = rej; });
    return { promise, resolve, reject };
  };
}
