// Segments: the filter builder of a segment's form and of an automation's condition, with its live
// count, and the campaign form's choice of segment. The pages work without it: the filter is then
// typed as JSON.
(function () {
  'use strict';

  function data(id) {
    var source = document.getElementById(id);
    return source ? JSON.parse(source.textContent) : null;
  }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function choice(choices, value, label, part) {
    var select = el('select');
    select.setAttribute('aria-label', label);
    if (part) select.setAttribute('data-part', part);
    choices.forEach(function (item) {
      var option = el('option', null, item.label);
      option.value = item.value;
      select.appendChild(option);
    });
    select.value = value;
    return select;
  }

  function input(value, label, part, placeholder) {
    var box = el('input');
    box.type = 'text';
    box.value = value;
    box.setAttribute('aria-label', label);
    if (part) box.setAttribute('data-part', part);
    if (placeholder) box.placeholder = placeholder;
    return box;
  }

  function button(label, className, action) {
    var node = el('button', className, label);
    node.type = 'button';
    node.addEventListener('click', action);
    return node;
  }

  // The campaign form: only the chosen book's segments can be picked.
  function segmentPicker(select) {
    var books = document.getElementById(select.getAttribute('data-segment-picker'));
    if (!books) return;
    function show() {
      select.querySelectorAll('optgroup').forEach(function (group) {
        var ofBook = group.getAttribute('data-book') === books.value;
        group.hidden = !ofBook;
        group.disabled = !ofBook;
      });
      var chosen = select.options[select.selectedIndex];
      if (chosen && chosen.parentNode.disabled) select.value = '';
    }
    books.addEventListener('change', show);
    show();
  }

  var WORDLESS = ['exists', 'notExists'];
  var ORDERED = ['gt', 'gte', 'lt', 'lte'];
  var NUMBER = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;

  function filterBuilder(root, vocabulary) {
    var textarea = document.getElementById(root.getAttribute('data-builder'));
    var box = root.parentNode;
    var form = root.closest('form');
    var output = form.querySelector('[data-live-count]');
    var token = document.querySelector('meta[name=csrf-token]');
    var fields = {};
    vocabulary.fields.forEach(function (field) { fields[field.value] = field; });
    var errors = data('segment-errors') || [];
    // What saving the filter was refused for stands while the filter is the one refused: a count
    // checks less than saving does (an automation's steps, say).
    var refused = errors.slice();
    var refusedFilter = null;
    // An automation's condition may read the mail of one of its earlier send steps.
    var steps = vocabulary.steps || [];
    var filter = null;

    var fieldOf = function (name) { return fields[name] || (typeof name === 'string' && name.indexOf('properties.') === 0 ? fields['properties.'] : null); };
    var isScalar = function (value) { return ['string', 'number', 'boolean'].indexOf(typeof value) >= 0; };
    var only = function (node, keys) { return Object.keys(node).every(function (key) { return keys.indexOf(key) >= 0; }); };

    // What the builder can show as it is; anything else stays JSON, never rewritten behind the person's back.
    function shown(node, depth) {
      if (!node || typeof node !== 'object' || Array.isArray(node)) return false;
      var key = Array.isArray(node.all) ? 'all' : Array.isArray(node.any) ? 'any' : null;
      if (key) return only(node, [key]) && depth <= vocabulary.maxDepth && node[key].every(function (child) { return shown(child, depth + 1); });
      if (depth === 1) return false;
      if ('event' in node) {
        return only(node, ['event', 'within', 'campaignId', 'negate'].concat(steps.length ? ['step'] : [])) && vocabulary.events.some(function (event) { return event.value === node.event; }) &&
          (node.step === undefined || steps.some(function (step) { return step.value === node.step; })) &&
          ['within', 'campaignId'].every(function (key) { return node[key] === undefined || typeof node[key] === 'string'; }) && (node.negate === undefined || typeof node.negate === 'boolean');
      }
      var field = fieldOf(node.field);
      return only(node, ['field', 'op', 'value']) && !!field && field.ops.some(function (op) { return op.value === node.op; }) &&
        (node.value === undefined || isScalar(node.value) || (Array.isArray(node.value) && node.value.every(isScalar)));
    }

    function load() {
      try {
        var parsed = JSON.parse(textarea.value);
        filter = shown(parsed, 1) ? parsed : null;
      } catch (error) {
        filter = null;
      }
    }

    // The value as the filter takes it: a list for `in`, a number where one compares as a number.
    function typed(text, node, field) {
      if (node.op === 'in') return text.split(',').map(function (item) { return item.trim(); }).filter(Boolean);
      var numeric = NUMBER.test(text) && (typeof node.value === 'number' || (field.kind === 'property' && ORDERED.indexOf(node.op) >= 0));
      return numeric ? Number(text) : text;
    }

    // A value that fits the field and op after either changed.
    function refit(node, field) {
      if (WORDLESS.indexOf(node.op) >= 0) delete node.value;
      else if (field.kind === 'boolean') node.value = node.value === false ? false : true;
      else if (node.op === 'in') node.value = Array.isArray(node.value) ? node.value : node.value === undefined || node.value === '' || typeof node.value === 'boolean' ? [] : [String(node.value)];
      else if (Array.isArray(node.value)) node.value = node.value.join(', ');
      else if (node.value === undefined || typeof node.value === 'boolean') node.value = '';
    }

    var newCondition = function () { return { field: 'email', op: 'contains', value: '' }; };

    function conditionView(node, path, remove) {
      var row = el('div', 'filter-condition');
      row.setAttribute('data-path', path);
      var field = fieldOf(node.field);
      var fieldChoice = choice(vocabulary.fields, field.value, 'Field', 'field');
      fieldChoice.addEventListener('change', function () {
        var next = fields[fieldChoice.value];
        node.field = next.kind === 'property' ? 'properties.' : next.value;
        if (!next.ops.some(function (op) { return op.value === node.op; })) node.op = next.ops[0].value;
        if (next.kind !== field.kind) delete node.value;
        refit(node, next);
        changed(true);
      });
      row.appendChild(fieldChoice);
      if (field.kind === 'property') {
        var property = input(node.field.slice('properties.'.length), 'Property name', 'field', 'plan');
        property.addEventListener('input', function () { node.field = 'properties.' + property.value; changed(false); });
        row.appendChild(property);
      }
      var op = choice(field.ops, node.op, 'Operator', 'op');
      op.addEventListener('change', function () { node.op = op.value; refit(node, field); changed(true); });
      row.appendChild(op);
      if (WORDLESS.indexOf(node.op) < 0) {
        if (field.kind === 'boolean') {
          var yes = choice([{ value: 'true', label: 'yes' }, { value: 'false', label: 'no' }], String(node.value !== false), 'Value', 'value');
          yes.addEventListener('change', function () { node.value = yes.value === 'true'; changed(false); });
          row.appendChild(yes);
        } else {
          var list = node.op === 'in';
          var hint = list ? 'gold, silver' : field.kind === 'date' || ORDERED.indexOf(node.op) >= 0 ? '30 days ago, or 2025-01-31' : '';
          var value = input(Array.isArray(node.value) ? node.value.join(', ') : String(node.value === undefined ? '' : node.value), list ? 'Values, separated by commas' : 'Value', 'value', hint);
          value.addEventListener('input', function () { node.value = typed(value.value, node, field); changed(false); });
          row.appendChild(value);
        }
      }
      row.appendChild(button('Remove', 'link', remove));
      return row;
    }

    function engagementView(node, path, remove) {
      var row = el('div', 'filter-condition filter-engagement');
      row.setAttribute('data-path', path);
      var negate = choice([{ value: '', label: 'Has' }, { value: 'true', label: 'Has not' }], node.negate ? 'true' : '', 'Has or has not', 'negate');
      negate.addEventListener('change', function () {
        if (negate.value) node.negate = true;
        else delete node.negate;
        changed(false);
      });
      var event = choice(vocabulary.events, node.event, 'Event', 'event');
      event.addEventListener('change', function () { node.event = event.value; changed(false); });
      row.appendChild(negate);
      row.appendChild(event);
      if (steps.length) {
        var step = choice([{ value: '', label: 'any email' }].concat(steps), node.step || '', 'Send step', 'step');
        step.addEventListener('change', function () {
          if (step.value) node.step = step.value;
          else delete node.step;
          changed(false);
        });
        row.appendChild(el('span', 'muted', 'from'));
        row.appendChild(step);
      }
      [['within', 'within the last', 'Within', 'any time, or 30 days'], ['campaignId', 'of campaign', 'Campaign ID', 'any campaign']].forEach(function (part) {
        var box = input(node[part[0]] || '', part[2], part[0], part[3]);
        box.addEventListener('input', function () {
          if (box.value.trim()) node[part[0]] = box.value.trim();
          else delete node[part[0]];
          changed(false);
        });
        row.appendChild(el('span', 'muted', part[1]));
        row.appendChild(box);
      });
      row.appendChild(button('Remove', 'link', remove));
      return row;
    }

    function groupView(node, path, depth, remove) {
      var key = node.all ? 'all' : 'any';
      var group = el('div', 'filter-group');
      group.setAttribute('role', 'group');
      group.setAttribute('aria-label', depth === 1 ? 'Filter builder' : 'Group');
      group.setAttribute('data-path', path);
      var head = el('div', 'filter-group-head');
      var match = choice([{ value: 'all', label: 'All of these' }, { value: 'any', label: 'Any of these' }], key, 'Match', key);
      match.addEventListener('change', function () {
        if (match.value === key) return;
        node[match.value] = node[key];
        delete node[key];
        changed(true);
      });
      head.appendChild(el('span', 'muted', depth === 1 ? 'Contacts matching' : 'Matching'));
      head.appendChild(match);
      if (remove) head.appendChild(button('Remove group', 'link', remove));
      group.appendChild(head);
      var items = el('ol', 'filter-items');
      node[key].forEach(function (child, index) {
        var childPath = path + '.' + key + '[' + index + ']';
        var drop = function () { node[key].splice(index, 1); changed(true); };
        var item = el('li');
        item.appendChild(child.all || child.any ? groupView(child, childPath, depth + 1, drop) : 'event' in child ? engagementView(child, childPath, drop) : conditionView(child, childPath, drop));
        items.appendChild(item);
      });
      if (node[key].length === 0) items.appendChild(el('li', 'muted', 'No conditions yet: add one.'));
      group.appendChild(items);
      var add = el('div', 'row-actions');
      var push = function (child) { return function () { node[key].push(child()); changed(true); }; };
      add.appendChild(button('Add condition', 'secondary', push(newCondition)));
      add.appendChild(button('Add engagement', 'secondary', push(function () { return { event: 'opened', within: '30 days' }; })));
      if (depth < vocabulary.maxDepth) add.appendChild(button('Add group', 'secondary', push(function () { return { any: [newCondition()] }; })));
      group.appendChild(add);
      return group;
    }

    // Each error beside the part of the filter it names (`filter.all[2].op`: the third item's op);
    // those the builder does not show (a filter it cannot draw, the JSON itself) listed under the field.
    function showErrors() {
      root.querySelectorAll('.builder-error').forEach(function (note) { note.remove(); });
      root.querySelectorAll('[aria-invalid]').forEach(function (control) { control.removeAttribute('aria-invalid'); });
      var unplaced = errors.filter(function (error) { return !markError(error); });
      var old = box.querySelector('.filter-errors');
      if (old) old.remove();
      box.classList.toggle('has-error', errors.length > 0);
      if (unplaced.length === 0) {
        textarea.removeAttribute('aria-invalid');
        return;
      }
      var list = el('ul', 'error filter-errors');
      list.id = 'f-filter-error';
      unplaced.forEach(function (error) {
        var item = el('li');
        item.appendChild(el('code', null, error.path));
        item.appendChild(document.createTextNode(' ' + error.message));
        list.appendChild(item);
      });
      box.appendChild(list);
      textarea.setAttribute('aria-invalid', 'true');
    }

    function markError(error) {
      var target = null;
      root.querySelectorAll('[data-path]').forEach(function (node) {
        var at = node.getAttribute('data-path');
        var next = error.path.charAt(at.length);
        if (error.path.indexOf(at) === 0 && (next === '' || next === '.' || next === '[') && (!target || at.length > target.getAttribute('data-path').length)) target = node;
      });
      if (!target) return false;
      var part = error.path.slice(target.getAttribute('data-path').length + 1);
      var control = part && target.querySelector(':scope > [data-part="' + part + '"], :scope > .filter-group-head > [data-part="' + part + '"]');
      if (control) control.setAttribute('aria-invalid', 'true');
      var note = el('small', 'error builder-error', error.path + ' ' + error.message);
      if (target.classList.contains('filter-group')) target.insertBefore(note, target.children[1]);
      else target.appendChild(note);
      return true;
    }

    var timer = null;
    var asked = 0;
    function count() {
      clearTimeout(timer);
      var mine = ++asked;
      output.textContent = 'Counting…';
      fetch(root.getAttribute('data-count-url'), {
        method: 'POST',
        headers: { 'X-CSRF-Token': token ? token.getAttribute('content') : '' },
        body: new URLSearchParams({ filter: textarea.value }),
      })
        .then(function (response) {
          return response.json().catch(function () { return {}; }).then(function (answer) {
            if (answer.errors || typeof answer.text === 'string') return answer;
            throw new Error('the server answered ' + response.status);
          });
        })
        .then(function (answer) {
          if (mine !== asked) return;
          errors = answer.errors || [];
          if (textarea.value === refusedFilter) {
            errors = errors.concat(refused.filter(function (error) {
              return !errors.some(function (other) { return other.path === error.path && other.message === error.message; });
            }));
          }
          output.textContent = answer.errors ? 'Not counted: the filter has ' + (errors.length === 1 ? 'a mistake' : errors.length + ' mistakes') + ', shown above' : answer.text;
          showErrors();
        })
        .catch(function (error) { if (mine === asked) output.textContent = 'Could not count: ' + error.message; });
    }

    function render() {
      root.textContent = '';
      if (filter) root.appendChild(groupView(filter, 'filter', 1, null));
      else {
        root.appendChild(el('p', 'hint', 'The builder cannot show this filter: edit it as JSON below.'));
        json.open = true;
      }
      showErrors();
    }

    // Each change rewrites the JSON that is sent, and counts it again once the typing pauses.
    function changed(redraw) {
      textarea.value = JSON.stringify(filter, null, 2);
      if (redraw) render();
      clearTimeout(timer);
      timer = setTimeout(count, 400);
    }

    var json = el('details', 'filter-json');
    json.appendChild(el('summary', null, 'Filter as JSON'));
    textarea.parentNode.insertBefore(json, textarea);
    json.appendChild(textarea);
    textarea.addEventListener('input', function () {
      load();
      render();
      clearTimeout(timer);
      timer = setTimeout(count, 400);
    });
    form.addEventListener('submit', function (event) {
      if (event.submitter && event.submitter.name === 'intent' && event.submitter.value === 'count') {
        event.preventDefault();
        count();
      }
    });
    root.hidden = false;
    refusedFilter = textarea.value;
    load();
    render();
    count();
  }

  document.addEventListener('DOMContentLoaded', function () {
    var vocabulary = data('segment-vocabulary');
    document.querySelectorAll('[data-builder]').forEach(function (root) { if (vocabulary) filterBuilder(root, vocabulary); });
    document.querySelectorAll('select[data-segment-picker]').forEach(segmentPicker);
  });
})();
