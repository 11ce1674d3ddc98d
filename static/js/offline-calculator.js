/* The calculators of an exported (offline) runbook chapter: `manage.py export_runbook`.
 *
 * The page carries, in <script type="application/json" id="offline-calculators">, one program per
 * calculator family (runbook/export/calculators.py): the family's inputs, its given numbers as tables
 * over the choices they depend on (model, GPU, precision, whether an optional number is filled) or as
 * expressions of the typed numbers, and its step lists. The step formulas themselves are JavaScript
 * printed by sympy from the engine's own expressions, defined before this script as
 * window.OfflineFormulas. This driver only does what the issue allows by hand: read the form, check
 * the inputs, step through the formulas in order (ceilings and floors as the engine's whole_ceil and
 * whole_floor), branch (the ladder's does-not-fit alert) and format every number exactly as
 * calculators.engine.procedures.base.format_number does. No network, no htmx.
 */
(function () {
  "use strict";

  // --- rounding and number formatting: Python's format() rules, ties to even on the exact binary value

  var WHOLE_TOLERANCE = 1e-9;

  function nearWhole(value) {
    var nearest = pyRound(value);
    return Math.abs(value - nearest) <= WHOLE_TOLERANCE * Math.max(1, Math.abs(value)) ? nearest : null;
  }

  function pyRound(value) {  // Python's round(): halves to even
    var floor = Math.floor(value), diff = value - floor;
    if (diff > 0.5) return floor + 1;
    if (diff < 0.5) return floor;
    return floor % 2 === 0 ? floor : floor + 1;
  }

  var R = {
    wholeCeil: function (value) { var n = nearWhole(value); return n !== null ? n : Math.ceil(value); },
    wholeFloor: function (value) { var n = nearWhole(value); return n !== null ? n : Math.floor(value); },
    // procedures/tp.py buyable_degree: powers of two up to a node, then whole nodes.
    // procedures/tp.py buyable_degree, then head_splitting_degree: the first buyable degree that
    // divides the query heads and divides (or is a multiple of) the K/V heads.
    buyableDegree: function (cards, perNode) {
      var needed = Math.max(1, Math.ceil(cards)), node = Math.max(1, Math.trunc(perNode));
      if (needed > node) return node * Math.ceil(needed / node);
      var degree = 1;
      while (degree < needed) degree *= 2;
      return Math.min(degree, node);
    },
    // procedures/pareto_curve.py power_of_two_at_most: the doubling grid's largest point at most x.
    gridBatch: function (x) {
      if (!(x >= 1)) return 0;
      var power = 1;
      while (power * 2 <= x) power *= 2;
      return power;
    },
    splitsHeads: function (degree, heads, kvHeads) {
      return heads % degree === 0 && (kvHeads % degree === 0 || degree % kvHeads === 0);
    },
    // calculators/engine/step_model.py largest_batch: the largest batch whose step, as a share of the
    // target, is at most 1 (doubling, then bisection).
    largestBatch: function (a0, aExperts, a1, c1, m0, m1, experts, k) {
      function fits(b) {
        var touched = experts > 0 ? aExperts * (1 - Math.pow(1 - k / experts, b)) : 0;
        return Math.max(a0 + touched + a1 * b, c1 * b) + m0 + m1 * b <= 1 + 1e-12;
      }
      if (!fits(1)) return 0;
      var low = 1, high = 2;
      while (fits(high)) {
        low = high; high *= 2;
        if (high > Math.pow(2, 40)) return low;
      }
      while (high - low > 1) {
        var middle = Math.floor((low + high) / 2);
        if (fits(middle)) low = middle; else high = middle;
      }
      return low;
    },
    nextTpDegree: function (cards, perNode, heads, kvHeads) {
      var first = R.buyableDegree(cards, perNode), node = Math.max(1, Math.trunc(perNode));
      var ladder = [], degree = 1;
      while (degree <= node) { ladder.push(degree); degree *= 2; }
      for (degree = 2 * node; degree <= 64 * node; degree += node) ladder.push(degree);
      for (var i = 0; i < ladder.length; i += 1) {
        if (ladder[i] >= first && R.splitsHeads(ladder[i], heads, kvHeads)) return ladder[i];
      }
      return first;
    }
  };
  window.OfflineRounding = R;

  // |x| as decimal digits d0 d1 … (101 significant, enough to tell an exact tie) and exponent e: d0.d1… × 10^e
  function decimalDigits(x) {
    var text = Math.abs(x).toExponential(100), parts = text.split("e");
    return { digits: parts[0].replace(".", ""), exp: parseInt(parts[1], 10) };
  }

  // The first `keep` digits, rounded half to even on the rest; may come back one digit longer (carry).
  function roundDigits(digits, keep) {
    if (keep >= digits.length) return digits + new Array(keep - digits.length + 1).join("0");
    if (keep < 0) return "";
    var kept = digits.slice(0, keep), rest = digits.slice(keep);
    var first = rest.charAt(0), tail = /[1-9]/.test(rest.slice(1));
    var last = keep > 0 ? parseInt(kept.charAt(keep - 1), 10) : 0;
    var up = first > "5" || (first === "5" && (tail || last % 2 === 1));
    if (!up) return kept;
    var chars = kept.split(""), i = chars.length - 1;
    while (i >= 0) {
      if (chars[i] === "9") { chars[i] = "0"; i -= 1; } else { chars[i] = String(parseInt(chars[i], 10) + 1); break; }
    }
    return (i < 0 ? "1" : "") + chars.join("");
  }

  function negative(x) { return x < 0 || Object.is(x, -0); }

  function group(intText) { return intText.replace(/\B(?=(\d{3})+(?!\d))/g, ","); }

  // format(x, ",.Nf") (grouped) or ".Nf"
  function fixed(x, decimals, grouped) {
    var sign = negative(x) ? "-" : "", scaled;
    if (x === 0) {
      scaled = "0";
    } else {
      var d = decimalDigits(x);
      scaled = roundDigits(d.digits, d.exp + 1 + decimals) || "0";
    }
    while (scaled.length < decimals + 1) scaled = "0" + scaled;
    var intPart = scaled.slice(0, scaled.length - decimals).replace(/^0+(?=\d)/, "");
    var frac = scaled.slice(scaled.length - decimals);
    return sign + (grouped ? group(intPart) : intPart) + (decimals ? "." + frac : "");
  }

  // format(x, ".Pe")
  function scientific(x, precision) {
    var sign = negative(x) ? "-" : "";
    if (x === 0) return sign + "0" + (precision ? "." + new Array(precision + 1).join("0") : "") + "e+00";
    var d = decimalDigits(x), digits = roundDigits(d.digits, precision + 1), exp = d.exp;
    if (digits.length > precision + 1) { exp += 1; digits = digits.slice(0, precision + 1); }
    var mantissa = digits.charAt(0) + (precision ? "." + digits.slice(1) : "");
    var e = Math.abs(exp);
    return sign + mantissa + "e" + (exp < 0 ? "-" : "+") + (e < 10 ? "0" : "") + e;
  }

  function stripZeros(text) {
    return text.indexOf(".") >= 0 ? text.replace(/0+$/, "").replace(/\.$/, "") : text;
  }

  // format(x, ".Pg") (and "g" is P = 6)
  function general(x, precision) {
    precision = precision || 1;
    if (x === 0) return negative(x) ? "-0" : "0";
    var d = decimalDigits(x), digits = roundDigits(d.digits, precision), exp = d.exp;
    if (digits.length > precision) exp += 1;
    if (exp >= -4 && exp < precision) return stripZeros(fixed(x, precision - 1 - exp, false));
    var parts = scientific(x, precision - 1).split("e");
    return stripZeros(parts[0]) + "e" + parts[1];
  }

  // calculators.engine.units: _fixed, _significant, _scientific, format_quantity. Which of them a unit
  // takes, its decimals, what follows the number and where e-notation starts are the unit's rule
  // (units.quantity_rule), shipped with the page's data: nothing here names a unit or a dimension.

  function unitsFixed(value, decimals, rule) {
    if (Math.abs(value) >= rule.fixed_limit) return unitsScientific(value, rule.digits);
    var text = fixed(value, decimals, true);
    return text.charAt(0) === "-" && !text.replace(/[-0.,]/g, "") ? text.slice(1) : text;
  }

  function unitsSignificant(value, rule) {
    var digits = rule.digits, magnitude = Math.abs(value);
    if (magnitude === 0) return "0";
    if (magnitude >= rule.significant_limit || magnitude < rule.significant_floor) return unitsScientific(value, digits);
    var decimals = Math.max(0, digits - 1 - Math.floor(Math.log10(magnitude)));
    var text = fixed(value, decimals, true);
    return text.indexOf(".") >= 0 ? text.replace(/0+$/, "").replace(/\.$/, "") : text;
  }

  function unitsScientific(value, digits) {
    var parts = scientific(value, digits - 1).split("e"), mantissa = parts[0];
    if (mantissa.indexOf(".") >= 0) mantissa = mantissa.replace(/0+$/, "").replace(/\.$/, "");
    return mantissa + "e" + parseInt(parts[1], 10);
  }

  function formatQuantity(value, unit, units) {
    var spec = units[unit], rule = spec.quantity;
    if (!isFinite(value)) throw new Error("Cannot display " + value + " " + spec.symbol + ": it is not a finite number.");
    if (rule.style === "money") {
      var number = unitsFixed(Math.abs(value), rule.decimals, rule);
      var sign = value < 0 && number.replace(/[0.,]/g, "") ? "-" : "";
      return sign + "$" + number + rule.suffix;
    }
    return (rule.style === "fixed" ? unitsFixed(value, rule.decimals, rule) : unitsSignificant(value, rule)) + rule.suffix;
  }

  // calculators.engine.procedures.base: _plain_number, format_operand, format_number. The rules per unit
  // (style, decimals, small-value rule, singular, bare operand) are calculators.engine.units's records,
  // exported with the page's data: nothing here names a unit.

  function plainNumber(value, rule) {  // rule: base.PLAIN_RULE, shipped with every unit
    if (Math.abs(value) >= rule.scientific_from) return general(value, rule.digits).replace("e+", "e");
    if (Number.isInteger(value)) return group(fixed(value, 0, false));
    if (Math.abs(value) >= rule.whole_from) return fixed(value, 0, true);
    var exact = general(value, rule.exact_digits);
    return Math.abs(value) < 1 && parseFloat(exact) === value ? exact : general(value, rule.digits);
  }

  function formatNumber(value, unit, units) {
    var spec = units[unit];
    if (!spec || !spec.style) return formatQuantity(value, unit, units);
    if (spec.style === "plain") return plainNumber(value, spec.plain);
    if (spec.singular && value === 1) return "1 " + spec.singular;
    if (spec.style === "tokens") return plainNumber(value, spec.plain) + " " + unit;
    if (spec.style === "bit") return general(value, 6) + " " + unit;
    if (spec.small_below && Math.abs(value) > 0 && Math.abs(value) < spec.small_below &&
        (!spec.small_if_hidden ||
         Math.abs(parseFloat(fixed(value, spec.decimals, false)) - value) > 0.001 * Math.abs(value))) {
      return general(value, spec.small_digits) + " " + unit;
    }
    if (spec.style === "mib") return (Number.isInteger(value) ? fixed(value, 0, true) : fixed(value, 1, true)) + " " + unit;
    return formatQuantity(value, unit, units);
  }

  function formatOperand(value, unit, units) {
    var spec = units[unit];
    return spec && spec.bare_operand ? plainNumber(value, spec.plain) : formatNumber(value, unit, units);
  }

  window.OfflineFormat = { formatNumber: formatNumber, plainNumber: plainNumber, general: general,
                           fixed: fixed, scientific: scientific };

  // --- reading the form ------------------------------------------------------------------------

  function quoted(text) {  // as calculators.engine.units.quote: in single quotes, at most 40 characters
    var cleaned = text.split(/\s+/).join(" ");
    return "'" + (cleaned.length > 40 ? cleaned.slice(0, 39).trim() + "\u2026" : cleaned) + "'";
  }

  function readInputs(form, program) {
    var raw = {}, errors = [];
    program.inputs.forEach(function (spec) {
      var field = form.elements.namedItem(spec.name);
      if (!field) { raw[spec.name] = spec.default; return; }
      var text = String(field.value).trim();
      var label = field.id && form.querySelector('label[for="' + field.id + '"]');
      var name = label ? label.textContent.trim() : spec.name;
      if (spec.kind === "model" || spec.kind === "gpu" || spec.kind === "choice") {
        raw[spec.name] = text || spec.default;
        return;
      }
      if (text === "") {
        if (spec.default === null) { raw[spec.name] = null; return; }
        errors.push([name, spec.messages.required]);
        return;
      }
      var number = Number(text);
      // The engine's reader (calculators/engine/answers.py) is not here: a box that holds more than a number in
      // digits is refused with what was read and what is expected, never half-read ("8k" as 8).
      if (!isFinite(number) || !/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) {
        errors.push([name, quoted(text) + " is not a number in digits; offline, a box reads digits only (such as " +
                           (spec.default !== null ? String(spec.default) : "12.5") + "). The site's calculators " +
                           "also read units, 8k and 2^13."]);
        return;
      }
      if (spec.kind === "int" && !Number.isInteger(number)) { errors.push([name, spec.messages.invalid]); return; }
      if (spec.min !== null && (spec.exclusive_min ? number <= spec.min : number < spec.min)) {
        errors.push([name, spec.messages.min]);
        return;
      }
      if (spec.max !== null && number > spec.max) {
        errors.push([name, spec.messages.max]);
        return;
      }
      raw[spec.name] = number;
    });
    return { raw: raw, errors: errors };
  }

  function cellKey(deps, raw) {
    return deps.map(function (dep) {
      if (dep.indexOf("has:") === 0) return raw[dep.slice(4)] === null || raw[dep.slice(4)] === undefined ? "-" : "+";
      return String(raw[dep]);
    }).join("|");
  }

  function callByName(fn, names, values) {
    return fn.apply(null, names.map(function (name) { return values[name]; }));
  }

  function argNames(fn) {
    var match = /^function\s*\(([^)]*)\)/.exec(String(fn));
    return match[1].split(",").map(function (s) { return s.trim(); }).filter(Boolean);
  }

  // The given numbers and steps of a program for typed inputs; throws Error(message) when rejected.
  function resolve(program, raw, formulas) {
    var steps = program.steps.cells[cellKey(program.steps.deps, raw)];
    if (!steps) throw new Error("These choices cannot be computed offline; open the calculator on the site.");
    if (steps.error) throw new Error(steps.error);
    var given = {}, derived = [];
    Object.keys(program.given).forEach(function (key) {
      var entry = program.given[key], cell = entry.cells[cellKey(entry.deps, raw)];
      if (cell === undefined) return;
      if (cell !== null && typeof cell === "object") {
        if (cell.error) throw new Error(cell.error);
        if (entry.derived) { derived.push([key, cell]); return; }
        var fn = formulas[cell.expr];
        given[key] = callByName(fn, argNames(fn), raw);
      } else {
        given[key] = cell;
      }
    });
    // Numbers read from typed inputs and tabulated ones (runbook/export/calculators.py DERIVED).
    derived.forEach(function (pair) {
      var fn = formulas[pair[1].expr];
      given[pair[0]] = callByName(fn, argNames(fn), Object.assign({}, raw, given));
    });
    if (program.extras && program.extras.settle) settle(steps, given, program.extras.settle, formulas);
    return { steps: steps, given: given };
  }

  // procedures/tp.py _settle_degree: run the steps at degree 1, then at the degree they choose
  // (a larger degree may replicate the K/V heads and need more still) until it stops growing.
  function settle(steps, given, spec, formulas) {
    var replication = formulas[spec.replication], degree = 1;
    for (;;) {
      given.gpus = degree;
      given.kv_replication = callByName(replication, argNames(replication), given);
      var chosen = Math.trunc(evaluate(steps, given, formulas).tp_degree);
      if (chosen <= degree || !R.splitsHeads(chosen, given.heads, given.kv_heads)) return;
      degree = chosen;
    }
  }

  // Evaluate the steps in order (the ladder's TP search passes other given numbers); `fixed` replaces
  // a step's value for the steps after it (the pareto curve's grid batch).
  function evaluate(steps, given, formulas, fixed) {
    var values = {};
    steps.forEach(function (step) {
      var bound = {};
      step.args.forEach(function (name) { bound[name] = step.from[name] ? values[step.from[name]] : given[name]; });
      values[step.key] = fixed && step.key in fixed ? fixed[step.key] : callByName(formulas[step.formula], step.args, bound);
    });
    return values;
  }

  // --- the procedures' own refusals (runbook/export/calculators.py CHECKS), in the engine's words

  // A check's sentence is the engine's own template, shipped with the check (procedures/offline.py):
  // {name} as Python's str() prints a name or a whole number, {name:g} as format(x, "g").
  function fill(template, values) {
    return template.replace(/\{(\w+)(:g)?\}/g, function (_, key, g) {
      return g ? general(values[key], 6) : String(values[key]);
    });
  }

  var CHECKS = {
    not_above: function (check, raw) {  // procedures/decode.py
      if (raw[check.low] > raw[check.high]) {
        return fill(check.message, { low: check.low, low_value: raw[check.low], high: check.high,
                                     high_value: raw[check.high] });
      }
    },
    packing: function (check, raw) {  // procedures/fleet.py check_packing
      var replica = raw[check.replica], node = raw[check.node];
      if (node % replica && replica % node) return fill(check.message, { replica: replica, node: node });
    },
    degree_rule: function (check, raw, values, given, data, program) {  // step_model.check_degree
      var table = function (name) {
        var entry = program.given[name], cell = entry && entry.cells[cellKey(entry.deps, raw)];
        return typeof cell === "number" ? cell : undefined;
      };
      var d = raw.gpus, heads = table("heads"), kv = table("kv_heads"), rank = table("kv_lora_rank");
      if (d === undefined || heads === undefined || kv === undefined) return;
      if (heads % d) return fill(check.heads_message, { degree: d, heads: heads });
      if (!rank && kv % d && d % kv) return fill(check.kv_heads_message, { degree: d, kv_heads: kv });
    },
    power_of_two: function (check, raw) {  // procedures/tp.py run_tp
      var n = raw[check.name];
      if (n & (n - 1)) return fill(check.message, { name: check.name, value: n });
    },
    link: function (check, raw, values, given, data) {  // procedures/slo.py slo_given
      if (raw.gpus > 1 && !given.link_gb_s) {
        return fill(check.message, { gpus: raw.gpus, gpu: data.gpu_names[raw.gpu], domain: given.nvlink_domain_gpus });
      }
    },
    pareto_feasible: function (check, raw, values, given, data) {  // procedures/pareto.py check_limits
      var gib = function (v) { return formatNumber(v, "GiB", data.units); };
      var cards = raw.gpus + " × " + data.gpu_names[raw.gpu];
      if (values.batch_memory_limit < 1) {
        return "The KV budget of " + gib(values.replica_kv_budget_gib) + " on " + cards + " holds no sequence of " +
          group(String(raw.context)) + " tokens (" + gib(values.per_user_gib) + ") after the weights: the curve " +
          "starts at a larger degree, a smaller precision or a shorter context.";
      }
      if (values.batch_tpot_limit < 1) {
        return "Not even one sequence meets a TPOT of " + general(raw.tpot_target_ms, 6) + " ms on " + cards +
          ": relax the target or add cards.";
      }
    },
    slo_feasible: function (check, raw, values, given, data) {  // procedures/slo.py _check_feasible
      var gib = function (v) { return formatNumber(v, "GiB", data.units); };
      var cards = raw.gpus + " × " + data.gpu_names[raw.gpu];
      if (values.batch_memory_limit < 1) {
        if (values.replica_kv_budget_gib <= 0) {
          return "The weights (" + gib(values.weights_gib) + ") and the activation reserves do not fit in " + cards +
            "; use more GPUs per replica or a smaller weight precision.";
        }
        return "The KV budget of " + gib(values.replica_kv_budget_gib) + " on " + cards + " cannot hold one sequence of " +
          group(String(raw.context)) + " tokens (" + gib(values.per_user_gib) + "); use more GPUs, a shorter context " +
          "or an fp8 cache.";
      }
      if (values.batch_tpot_limit < 1) {
        var reading = values.weights_gib * 1073741824 /
          (given.gpus * given.bandwidth_gb_s * 1e9 * given.bandwidth_efficiency) * 1e3;
        return "Not even one sequence meets a TPOT of " + general(raw.tpot_target_ms, 6) + " ms: reading the weights " +
          "alone takes " + general(reading, 3) + " ms at " + general(raw.bandwidth_efficiency, 6) + " of " + cards +
          "'s bandwidth. Relax the target or add GPUs.";
      }
    }
  };

  function runChecks(program, when, raw, values, given, data) {
    (program.checks || []).forEach(function (check) {
      if ((check.after || null) !== when) return;
      var message = CHECKS[check.kind](check, raw, values, given, data, program);
      if (message) throw new Error(message);
    });
  }

  // The whole computation, exposed for the export's node test (tests/runbook/export/test_export_runbook.py).
  window.OfflineCompute = function (program, raw, data) { return compute(program, raw, data); };

  function compute(program, raw, data) {
    runChecks(program, null, raw, null, null, data);
    var formulas = window.OfflineFormulas, resolved = resolve(program, raw, formulas);
    runChecks(program, "given", raw, null, resolved.given, data);
    var values = {}, rows = [];
    resolved.steps.forEach(function (step) {
      var bound = {};
      step.args.forEach(function (name) { bound[name] = step.from[name] ? values[step.from[name]] : resolved.given[name]; });
      var value = callByName(formulas[step.formula], step.args, bound);
      if (!isFinite(value)) throw new Error("These inputs make " + step.label.toLowerCase() + " overflow; use realistic sizes.");
      values[step.key] = value;
      var worked = step.worked.replace(/\{\{(\w+)\}\}/g, function (_, name) {
        return formatOperand(bound[name], step.units[name], data.units);
      });
      rows.push({ step: step, value: value, display: formatNumber(value, step.unit, data.units),
                  worked: worked + " = " + formatNumber(value, step.unit, data.units) });
      runChecks(program, step.key, raw, values, resolved.given, data);
    });
    var report = { rows: rows, values: values, alert: "", details: {} };
    if (program.alert === "ladder") ladderBranch(program, raw, resolved, values, report, data);
    if (program.extras && program.extras.curve) {
      report.curve = paretoCurve(program, raw, values, data);
      report.gpu = raw.gpu;
    }
    return report;
  }

  // procedures/pareto_curve.py pareto_curve: at each degree the heads accept and whose cards hold a
  // sequence, the steps re-run with the grid batch fixed at 1, 2, 4, … up to the KV limit.
  function paretoCurve(program, raw, values, data) {
    var formulas = window.OfflineFormulas, target = raw.tpot_target_ms;
    var degrees = program.extras.curve.degrees.slice();
    if (degrees.indexOf(raw.gpus) < 0) degrees.push(raw.gpus);
    degrees.sort(function (a, b) { return a - b; });
    var curve = { target_ms: target, target_tok_s_per_user: 1000 / target, degrees: [], marked: null, best: null };
    degrees.forEach(function (degree) {
      var entry = { gpus: degree, kv_limit: 0, refused: "", points: [], marked_batch: 0 };
      curve.degrees.push(entry);
      var at = Object.assign({}, raw, { gpus: degree });
      try {
        var resolved = resolve(program, at, formulas);
        runChecks(program, "given", at, null, resolved.given, data);
        var limit = evaluate(resolved.steps, resolved.given, formulas).batch_memory_limit;
        entry.kv_limit = limit;
        if (limit < 1) {
          entry.refused = "a replica of " + degree + " × " + data.gpu_names[raw.gpu] + " holds no sequence of " +
            group(String(raw.context)) + " tokens beside the weights and reserves.";
          return;
        }
        for (var batch = 1; batch <= limit; batch *= 2) {
          var v = evaluate(resolved.steps, resolved.given, formulas, { batch: batch });
          entry.points.push({ batch: batch, step_ms: v.step_ms, tok_s_per_user: v.tok_s_per_user,
                              tok_s_per_card: v.tok_s_per_card, meets_target: v.step_ms <= target * (1 + 1e-12) });
          if (v.step_ms <= target * (1 + 1e-12)) entry.marked_batch = batch;
        }
      } catch (error) {
        entry.refused = error.message;
      }
    });
    curve.degrees.forEach(function (d) {
      if (d.gpus === raw.gpus && d.marked_batch) curve.marked = { gpus: d.gpus, batch: d.marked_batch };
      d.points.forEach(function (p) {
        if (!p.meets_target) return;
        var b = curve.best;
        if (!b || p.tok_s_per_card > b.tok_s_per_card || (p.tok_s_per_card === b.tok_s_per_card && p.tok_s_per_user > b.tok_s_per_user)) {
          curve.best = Object.assign({ gpus: d.gpus }, p);
        }
      });
    });
    return curve;
  }

  // procedures/ladder.py run_ladder and forms._ladder_details: the does-not-fit alert and the headline details.
  function ladderBranch(program, raw, resolved, values, report, data) {
    var fmt = function (v) { return formatNumber(v, "GiB", data.units); };
    var formulas = window.OfflineFormulas;
    var pagedGiven = Object.assign({}, resolved.given, { kv_bytes_per_token: values.kv_bytes_per_token });
    var paged = callByName(formulas[program.extras.paged_user_gib], argNames(formulas[program.extras.paged_user_gib]), pagedGiven);
    report.details.users_worst_case = "every user at the " + group(String(raw.context)) + "-token limit, " +
      fmt(values.per_user_gib) + " each";
    report.details.users_paged = group(String(raw.avg_tokens)) + "-token average conversation in " +
      raw.block_size + "-token blocks, " + fmt(paged) + " each";
    if (values.users_worst_case >= 1) return;
    var degree = null;
    for (var i = 0; i < program.extras.tp_degrees.length && degree === null; i += 1) {
      var tried = evaluate(resolved.steps, Object.assign({}, resolved.given, { gpus: program.extras.tp_degrees[i] }), formulas);
      if (tried.users_worst_case >= 1) degree = program.extras.tp_degrees[i];
    }
    // The sentences are the engine's (procedures/ladder.py NOT_FITTING), shipped in the family's extras.
    var budget = values.kv_budget_gib, gpu = data.gpu_names[raw.gpu], say = program.extras.not_fitting, what, where;
    what = budget < 0
      ? fill(say.weights, { short: fmt(-budget), usable: fmt(values.usable_gib) })
      : fill(say.user, { left: fmt(budget), per_user: fmt(values.per_user_gib) });
    where = degree === null
      ? fill(say.no_degree, { degree: program.extras.tp_degrees[program.extras.tp_degrees.length - 1], gpu: gpu })
      : fill(say.degree, { degree: degree, gpu: gpu });
    if (Number(raw.pp) > 1) where = where.replace(/\.$/, "") + fill(say.stages, { pp: Number(raw.pp) });
    report.alert = what + " " + where;
  }

  // --- drawing the results (the markup of templates/calculators/_embed.html) ---------------------

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function splitDisplay(text, unit, units) {  // forms._split_display
    var at = text.lastIndexOf(" ");
    if (at > 0) {
      var suffix = text.slice(at + 1);
      if (suffix === unit || (units[unit] && suffix === units[unit].singular)) return [text.slice(0, at), suffix];
    }
    return [text, ""];
  }

  function draw(container, program, report, previous, data) {
    container.textContent = "";
    if (report.errors) {
      var box = el("div", "alert alert-danger py-2 small mb-2");
      box.setAttribute("role", "alert");
      report.errors.forEach(function (pair) {
        var p = el("p", "mb-0");
        if (pair[0]) { p.appendChild(el("strong", "", pair[0] + ":")); p.appendChild(document.createTextNode(" ")); }
        p.appendChild(document.createTextNode(pair[1]));
        box.appendChild(p);
      });
      container.appendChild(box);
      container.appendChild(el("p", "small text-body-secondary mb-0",
        "Nothing computed: correct the input named above, then calculate again."));
      return;
    }
    if (report.alert) {
      var alert = el("div", "alert alert-danger py-2 small mb-2 calc-embed-alert");
      alert.setAttribute("role", "alert");
      alert.appendChild(el("strong", "", "Does not fit."));
      alert.appendChild(document.createTextNode(" " + report.alert));
      container.appendChild(alert);
    }
    var byKey = {};
    report.rows.forEach(function (row) { byKey[row.step.key] = row; });
    var headlines = el("div", "calc-embed-headlines" + (report.alert ? " is-misfit" : ""));
    var keys = data.headlines[program.slug] || [report.rows[report.rows.length - 1].step.key];
    keys.forEach(function (key) {
      var row = byKey[key];
      if (!row) return;
      var changed = isChanged(previous, row);
      var cut = row.step.label.indexOf(" (");
      var title = cut >= 0 ? row.step.label.slice(0, cut) : row.step.label;
      var detail = cut >= 0 ? row.step.label.slice(cut + 2).replace(/\)$/, "") : "";  // the outer parenthesis only, as calculators/report.py
      if (report.details[key] !== undefined) detail = report.details[key];
      var parts = splitDisplay(row.display, row.step.unit, data.units);
      var box = el("div", "calc-embed-headline" + (changed ? " is-changed" : ""));
      box.setAttribute("data-headline", key);
      var head = el("div", "calc-embed-headline-title", title);
      if (changed) { head.appendChild(document.createTextNode(" ")); head.appendChild(el("span", "badge text-bg-warning calc-badge", "changed")); }
      box.appendChild(head);
      var number = el("div", "calc-embed-headline-number");
      number.appendChild(el("span", "tabular-nums", parts[0]));
      if (parts[1]) { number.appendChild(document.createTextNode(" ")); number.appendChild(el("span", "calc-headline-unit", parts[1])); }
      box.appendChild(number);
      if (detail) box.appendChild(el("div", "calc-embed-headline-detail", detail));
      headlines.appendChild(box);
    });
    container.appendChild(headlines);
    if (report.curve) container.appendChild(drawCurve(report.curve, data, data.gpu_names[report.gpu]));
    var list = el("ol", "calc-embed-steps");
    report.rows.forEach(function (row) {
      var changed = isChanged(previous, row);
      var item = el("li", "calc-embed-step" + (changed ? " is-changed" : ""));
      item.setAttribute("data-step", row.step.key);
      item.setAttribute("data-value", String(row.value));  // full precision, as in calc --json
      item.appendChild(el("span", "calc-embed-step-label", row.step.label));
      var value = el("span", "calc-embed-step-value tabular-nums", row.display);
      if (changed) {
        value.appendChild(document.createTextNode(" "));
        value.appendChild(el("span", "calc-was", "was " + formatNumber(previous[row.step.key], row.step.unit, data.units)));
      }
      item.appendChild(value);
      item.appendChild(el("span", "calc-embed-step-worked", row.worked));
      list.appendChild(item);
    });
    container.appendChild(list);
    container.appendChild(el("p", "calc-embed-offline-note small text-body-secondary mb-0",
      "Worked offline in this page. The notes on each result are on the site's calculator."));
  }

  // calculators/pareto_chart.py curve_view and templates/calculators/_curve.html: the chart (one line,
  // colour, marker shape and dash per degree; the target dashed, its too-slow side hatched; the
  // target's point ringed) and the table of every point.
  var SVG_NS = "http://www.w3.org/2000/svg";
  var CURVE = { width: 620, height: 420, left: 74, right: 600, top: 30, bottom: 330 };
  var CURVE_STYLES = [["#0072B2", "circle", null], ["#D55E00", "square", "7 4"], ["#009E73", "triangle", "2 4"],
                      ["#CC79A7", "diamond", "10 4 2 4"], ["#E69F00", "circle", "4 3"], ["#56B4E9", "square", "1 3"]];

  function svgEl(tag, attrs, text) {
    var node = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs || {}).forEach(function (key) { if (attrs[key] !== null) node.setAttribute(key, String(attrs[key])); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function niceStep(span) {  // pareto_chart._nice_step
    var raw = span / 6, power = Math.pow(10, Math.floor(Math.log10(raw)));
    var factors = [1, 2, 5, 10];
    for (var i = 0; i < factors.length; i += 1) if (factors[i] * power >= raw) return factors[i] * power;
    return 10 * power;
  }

  function curveMarker(kind, x, y, colour, filled) {
    var fill = filled ? colour : "#ffffff", size = 5, a = { fill: fill, stroke: colour, "stroke-width": 1.5 };
    var poly = function (points) {
      return svgEl("polygon", Object.assign({ points: points.map(function (p) { return p[0].toFixed(2) + "," + p[1].toFixed(2); }).join(" ") }, a));
    };
    if (kind === "square") return svgEl("rect", Object.assign({ x: x - size, y: y - size, width: 2 * size, height: 2 * size }, a));
    if (kind === "triangle") return poly([[x, y - size * 1.2], [x + size * 1.1, y + size * 0.8], [x - size * 1.1, y + size * 0.8]]);
    if (kind === "diamond") return poly([[x, y - size * 1.3], [x + size * 1.3, y], [x, y + size * 1.3], [x - size * 1.3, y]]);
    return svgEl("circle", Object.assign({ cx: x, cy: y, r: size }, a));
  }

  function cardsText(gpus) { return gpus === 1 ? "1 GPU" : gpus + " GPUs"; }

  function drawCurve(curve, data, gpuName) {
    var C = CURVE, units = data.units, tokS = function (v) { return formatNumber(v, "tok/s", units); };
    var series = curve.degrees.filter(function (d) { return d.points.length; });
    var points = [].concat.apply([], series.map(function (d) { return d.points; }));
    var section = el("section", "card shadow-sm mb-3 calc-curve");
    section.appendChild(el("h3", "h6 card-header bg-white mb-0", "Throughput against interactivity"));
    var body = el("div", "card-body");
    section.appendChild(body);
    if (!points.length) { body.appendChild(el("p", "small mb-0", "No degree holds a sequence.")); return section; }
    var xMax = Math.max.apply(null, points.map(function (p) { return p.tok_s_per_user; }).concat([curve.target_tok_s_per_user])) * 1.08;
    var yMax = Math.max.apply(null, points.map(function (p) { return p.tok_s_per_card; })) * 1.1;
    var xStep = niceStep(xMax), yStep = niceStep(yMax);
    xMax = Math.ceil(xMax / xStep) * xStep; yMax = Math.ceil(yMax / yStep) * yStep;
    var sx = function (v) { return C.left + v / xMax * (C.right - C.left); };
    var sy = function (v) { return C.bottom - v / yMax * (C.bottom - C.top); };
    var label = "Line chart of tok/s per card against tok/s per user on " + series.map(function (d) { return cardsText(d.gpus); }).join(", ") +
      " of " + gpuName + ", batches doubling up to the KV limit; the TPOT target of " + general(curve.target_ms, 6) +
      " ms is the dashed line at " + tokS(curve.target_tok_s_per_user) + " per user. The table below gives every point.";
    var svg = svgEl("svg", { viewBox: "0 0 " + C.width + " " + C.height, role: "img", "aria-label": label,
                             "class": "rb-figure-svg", "font-size": 15 });
    svg.appendChild(svgEl("title", {}, label));
    var tx = sx(curve.target_tok_s_per_user);
    svg.appendChild(svgEl("rect", { x: C.left, y: C.top, width: Math.max(0, tx - C.left), height: C.bottom - C.top,
                                    fill: "#e9ecf1", opacity: 0.7 }));
    for (var t = 0; t <= xMax + 1e-9; t += xStep) {
      svg.appendChild(svgEl("line", { x1: sx(t), y1: C.top, x2: sx(t), y2: C.bottom, stroke: "#e3e7ee" }));
      svg.appendChild(svgEl("text", { x: sx(t), y: C.bottom + 18, "font-size": 13, "text-anchor": "middle", fill: "#5c6675" }, fixed(t, 0, true)));
    }
    for (t = 0; t <= yMax + 1e-9; t += yStep) {
      svg.appendChild(svgEl("line", { x1: C.left, y1: sy(t), x2: C.right, y2: sy(t), stroke: "#e3e7ee" }));
      svg.appendChild(svgEl("text", { x: C.left - 6, y: sy(t) + 4.5, "font-size": 13, "text-anchor": "end", fill: "#5c6675" }, fixed(t, 0, true)));
    }
    svg.appendChild(svgEl("rect", { x: C.left, y: C.top, width: C.right - C.left, height: C.bottom - C.top, fill: "none", stroke: "#c9d2de" }));
    svg.appendChild(svgEl("text", { x: C.left - 66, y: C.top - 12, "font-size": 13, fill: "#5c6675" }, "tok/s per card"));
    svg.appendChild(svgEl("text", { x: C.right, y: C.top - 12, "font-size": 13, "text-anchor": "end", fill: "#5c6675" },
                          "hollow marker, shaded side: slower than the target"));
    svg.appendChild(svgEl("text", { x: (C.left + C.right) / 2, y: C.bottom + 38, "font-size": 13, "text-anchor": "middle", fill: "#5c6675" },
                          "tok/s per user (interactivity)"));
    svg.appendChild(svgEl("line", { x1: tx, y1: C.top, x2: tx, y2: C.bottom, stroke: "#1d2330", "stroke-width": 1.5, "stroke-dasharray": "6 4" }));
    svg.appendChild(svgEl("text", { x: tx + 6, y: C.bottom - 8, "font-size": 13, "font-weight": 600 }, "TPOT " + general(curve.target_ms, 6) + " ms"));
    var legendX = C.left - 60, isAt = function (mark, gpus, batch) { return mark && mark.gpus === gpus && mark.batch === batch; };
    series.forEach(function (degree, index) {
      var style = CURVE_STYLES[index % CURVE_STYLES.length];
      var coords = degree.points.map(function (p) { return [sx(p.tok_s_per_user), sy(p.tok_s_per_card)]; });
      if (coords.length > 1) {
        svg.appendChild(svgEl("path", { d: "M" + coords.map(function (c) { return c[0].toFixed(2) + " " + c[1].toFixed(2); }).join("L"),
                                        fill: "none", stroke: style[0], "stroke-width": 2, "stroke-dasharray": style[2] }));
      }
      degree.points.forEach(function (p, i) {
        svg.appendChild(curveMarker(style[1], coords[i][0], coords[i][1], style[0], p.meets_target));
        if (isAt(curve.marked, degree.gpus, p.batch)) {
          var left = coords[i][0] < C.right - 240;
          svg.appendChild(svgEl("circle", { cx: coords[i][0], cy: coords[i][1], r: 11, fill: "none", stroke: "#1d2330", "stroke-width": 2.5 }));
          svg.appendChild(svgEl("text", { x: coords[i][0] + (left ? 14 : -14), y: coords[i][1] + 20, "font-size": 13, "font-weight": 700,
                                          "text-anchor": left ? "start" : "end" },
                                "target's point: batch " + group(String(p.batch)) + ", " + cardsText(degree.gpus)));
        }
      });
      var ly = C.height - 20;
      svg.appendChild(svgEl("line", { x1: legendX, y1: ly - 5, x2: legendX + 26, y2: ly - 5, stroke: style[0], "stroke-width": 2, "stroke-dasharray": style[2] }));
      svg.appendChild(curveMarker(style[1], legendX + 13, ly - 5, style[0], true));
      svg.appendChild(svgEl("text", { x: legendX + 32, y: ly, "font-size": 13 }, cardsText(degree.gpus)));
      legendX += 100;
    });
    var figure = el("figure", "mb-3");
    figure.appendChild(svg);
    body.appendChild(figure);
    var table = el("table", "table table-sm numbers mb-0 calc-curve-table");
    table.appendChild(el("caption", "small", "Every point of the curve: " + gpuName + ", TPOT target " + general(curve.target_ms, 6) +
                         " ms (" + tokS(curve.target_tok_s_per_user) + " per user)."));
    var head = el("tr");
    ["GPUs", "Batch", "Step (TPOT)", "tok/s per user", "tok/s per card", "Meets the target", "Mark"].forEach(function (name) {
      var th = el("th", "", name); th.setAttribute("scope", "col"); head.appendChild(th);
    });
    table.appendChild(el("thead")).appendChild(head);
    var tbody = table.appendChild(el("tbody"));
    series.forEach(function (degree) {
      degree.points.forEach(function (p) {
        var marks = [];
        if (isAt(curve.marked, degree.gpus, p.batch)) marks.push("the target's point");
        if (isAt(curve.best, degree.gpus, p.batch)) marks.push("best per card");
        var tr = el("tr", marks.length ? "table-active" : "");
        var th = el("th", "tabular-nums", String(degree.gpus)); th.setAttribute("scope", "row"); tr.appendChild(th);
        [group(String(p.batch)), formatNumber(p.step_ms, "ms", units), tokS(p.tok_s_per_user), tokS(p.tok_s_per_card),
         p.meets_target ? "yes" : "no", marks.join(", ")].forEach(function (text) { tr.appendChild(el("td", "tabular-nums", text)); });
        tbody.appendChild(tr);
      });
    });
    var wrap = el("div", "table-responsive");
    wrap.appendChild(table);
    body.appendChild(wrap);
    var refused = curve.degrees.filter(function (d) { return d.refused; });
    if (refused.length) {
      var list = el("ul", "small text-body-secondary mt-2 mb-0");
      refused.forEach(function (d) { list.appendChild(el("li", "", "No curve at " + cardsText(d.gpus) + ": " + d.refused)); });
      body.appendChild(list);
    }
    return section;
  }

  function isChanged(previous, row) {  // forms._changed
    if (!previous || !(row.step.key in previous)) return false;
    var a = previous[row.step.key], b = row.value;
    return !(Math.abs(a - b) <= Math.max(1e-9 * Math.max(Math.abs(a), Math.abs(b)), 1e-12));
  }

  // --- wiring --------------------------------------------------------------------------------

  function setup(aside, data) {
    var program = data.programs[aside.getAttribute("data-family")];
    var form = aside.querySelector("form");
    var container = aside.querySelector(".calc-embed-results");
    if (!program || !form || !container) return;
    // The page opens with the preset's results as the site rendered them (notes included, and what
    // prints); the driver takes over at the first change, marking what changed since then.
    var previous = null, stored = container.querySelector('input[name="previous"]');
    try { previous = stored && stored.value ? JSON.parse(stored.value) : null; } catch (error) { previous = null; }

    function recalculate() {
      var read = readInputs(form, program), report;
      if (read.errors.length) {
        report = { errors: read.errors };
      } else {
        try {
          report = compute(program, read.raw, data);
        } catch (error) {
          report = { errors: [["", error.message]] };
        }
      }
      draw(container, program, report, previous, data);
      if (report.values) previous = report.values;
      aside.setAttribute("data-computed", String(Number(aside.getAttribute("data-computed") || 0) + 1));
    }

    form.addEventListener("submit", function (event) { event.preventDefault(); recalculate(); });
    form.addEventListener("change", recalculate);  // as the site's hx-trigger: "change, submit"
    form.addEventListener("reset", function () { window.setTimeout(recalculate, 0); });
    aside.setAttribute("data-offline-ready", "true");
  }

  function start() {
    var source = document.getElementById("offline-calculators");
    if (!source) return;
    var data = JSON.parse(source.textContent);
    document.querySelectorAll("aside.calc-embed[data-family]").forEach(function (aside) { setup(aside, data); });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
