// The dashboard's progressive enhancement: every page works without it.
(function () {
  'use strict';

  // Times in the reader's own zone.
  function localTimes(root) {
    root.querySelectorAll('time[datetime]').forEach(function (el) {
      var d = new Date(el.getAttribute('datetime'));
      if (!isNaN(d)) {
        el.title = el.getAttribute('datetime');
        el.textContent = d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
      }
    });
  }

  document.addEventListener('click', function (event) {
    var button = event.target.closest('button[data-copy]');
    if (!button) return;
    var text = button.getAttribute('data-copy');
    var done = function () {
      var label = button.textContent;
      button.textContent = 'Copied';
      setTimeout(function () { button.textContent = label; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done);
    else {
      var area = document.createElement('textarea');
      area.value = text;
      document.body.appendChild(area);
      area.select();
      document.execCommand('copy');
      area.remove();
      done();
    }
  });

  document.addEventListener('submit', function (event) {
    var form = event.target;
    var question = form.getAttribute('data-confirm');
    if (question && !window.confirm(question)) event.preventDefault();
  });

  // Charts: a canvas names the JSON block holding its data (see jsonData in layout.ts).
  function charts() {
    if (typeof window.Chart === 'undefined') return;
    document.querySelectorAll('canvas[data-chart]').forEach(function (canvas) {
      var source = document.getElementById(canvas.getAttribute('data-chart'));
      if (!source) return;
      var spec = JSON.parse(source.textContent);
      new window.Chart(canvas, {
        type: spec.type || 'line',
        data: spec.data,
        options: Object.assign({ responsive: true, maintainAspectRatio: false, animation: false, interaction: { mode: 'index', intersect: false } }, spec.options || {}),
      });
    });
  }

  // Forms that upload a file as the request body (data-upload): streamed, never held in a form post.
  document.addEventListener('submit', function (event) {
    var form = event.target;
    if (!form.hasAttribute('data-upload')) return;
    event.preventDefault();
    var input = form.querySelector('input[type=file]');
    var file = input && input.files && input.files[0];
    var out = form.querySelector('[data-upload-result]');
    if (!file) { if (out) out.textContent = 'Choose a file first.'; return; }
    var token = document.querySelector('meta[name=csrf-token]');
    if (out) out.textContent = 'Uploading…';
    fetch(form.getAttribute('action'), {
      method: 'POST',
      headers: { 'Content-Type': file.type || 'text/csv', 'X-CSRF-Token': token ? token.getAttribute('content') : '' },
      body: file,
    })
      .then(function (response) { return response.text().then(function (text) { return { ok: response.ok, text: text }; }); })
      .then(function (result) {
        if (out) {
          out.innerHTML = result.text;
          localTimes(out);
        }
      })
      .catch(function (error) { if (out) out.textContent = 'Upload failed: ' + error.message; });
  });

  document.addEventListener('DOMContentLoaded', function () {
    localTimes(document);
    charts();
  });
})();
