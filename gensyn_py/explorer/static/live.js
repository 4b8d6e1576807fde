// Live pages: one server-sent event per index change; the page's <main> is fetched again and swapped in if it changed.
// A page never stays behind the index it was told of: a failed fetch is retried, a closed stream reopened.
(function () {
  "use strict";
  var RETRY_MS = 1000;
  var badge = document.getElementById("live");
  var wanted = document.body.dataset.version; // the newest index version the stream announced
  var busy = false;
  function refresh() {
    if (busy || wanted === document.body.dataset.version) {
      return;
    }
    busy = true;
    var target = wanted,
      ok = false;
    var url =
      location.pathname +
      (location.search ? location.search + "&" : "?") +
      "fragment=1";
    fetch(url, { cache: "no-store" })
      .then(function (r) {
        // A 404 is a page too ("no job 7" until the index has its block); a server error is not.
        if (!r.ok && r.status !== 404) {
          throw new Error("HTTP " + r.status);
        }
        return r.text();
      })
      .then(function (html) {
        var main = document.getElementById("page");
        var next = document.createElement("template");
        next.innerHTML = html;
        var have = main.childNodes,
          fresh = next.content.childNodes;
        if (have.length !== fresh.length) {
          var y = window.scrollY;
          main.innerHTML = html;
          window.scrollTo(0, y);
        } else {
          // Swap only the parts that changed (the footer's block and version always do): an index change
          // elsewhere leaves this page's elements (a link being clicked, a selection) as they are.
          for (var i = 0; i < fresh.length; i++) {
            if (!have[i].isEqualNode(fresh[i])) {
              main.replaceChild(document.importNode(fresh[i], true), have[i]);
            }
          }
        }
        document.body.dataset.version = target; // the content read at least this version of the index
        ok = true;
      })
      .catch(function () {})
      .finally(function () {
        busy = false;
        if (ok) {
          refresh();
        } else {
          setTimeout(refresh, RETRY_MS);
        }
      });
  }
  function listen() {
    var source = new EventSource("/live");
    source.onopen = function () {
      badge.classList.add("on");
    };
    source.onerror = function () {
      badge.classList.remove("on");
      // The browser retries a dropped stream itself, but gives up on one the server answered with an error.
      if (source.readyState === EventSource.CLOSED) {
        setTimeout(listen, RETRY_MS);
      }
    };
    source.onmessage = function (e) {
      wanted = e.data;
      refresh();
    };
  }
  if (window.EventSource) {
    listen();
  }
  window.go = function (form) {
    var q = form.q.value.trim();
    if (/^0x[0-9a-fA-F]{40}$/.test(q)) {
      location.href = "/node/" + q;
    } else if (/^(job|unit|dispute|game)\s*\d+$/i.test(q)) {
      var m = q.match(/^(\w+)\s*(\d+)$/);
      location.href = "/" + m[1].toLowerCase() + "/" + m[2];
    } else if (/^\d+$/.test(q)) {
      location.href = "/job/" + q;
    }
    return false;
  };
})();
