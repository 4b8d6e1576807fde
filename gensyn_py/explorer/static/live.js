// Live pages: one server-sent event per index change; the page's <main> is fetched again and swapped in.
(function () {
  "use strict";
  var badge = document.getElementById("live");
  var busy = false, again = false;
  function refresh(version) {
    if (busy) { again = true; return; }
    busy = true;
    var url = location.pathname + (location.search ? location.search + "&" : "?") + "fragment=1";
    fetch(url, { cache: "no-store" }).then(function (r) { return r.text(); }).then(function (html) {
      var main = document.getElementById("page");
      var y = window.scrollY;
      main.innerHTML = html;
      window.scrollTo(0, y);
      document.body.dataset.version = version;
    }).catch(function () {}).finally(function () {
      busy = false;
      if (again) { again = false; refresh(document.body.dataset.version); }
    });
  }
  if (window.EventSource) {
    var source = new EventSource("/live");
    source.onopen = function () { badge.classList.add("on"); };
    source.onerror = function () { badge.classList.remove("on"); };
    source.onmessage = function (e) {
      if (e.data !== document.body.dataset.version) { refresh(e.data); }
    };
  }
  window.go = function (form) {
    var q = form.q.value.trim();
    if (/^0x[0-9a-fA-F]{40}$/.test(q)) { location.href = "/node/" + q; }
    else if (/^(job|unit|dispute|game)\s*\d+$/i.test(q)) { var m = q.match(/^(\w+)\s*(\d+)$/); location.href = "/" + m[1].toLowerCase() + "/" + m[2]; }
    else if (/^\d+$/.test(q)) { location.href = "/job/" + q; }
    return false;
  };
})();
