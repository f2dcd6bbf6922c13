// The console's graph page: draws the canvas (.graph-canvas[data-graph-url]) with Cytoscape.js from the
// page's JSON ({nodes, edges, truncated}); a click on a node loads its detail panel (an htmx fragment) beside
// it; a panel's "Expand" button adds that entity's neighbours to the drawing. Entity names are untrusted:
// Cytoscape draws them as canvas text, and anything put in the DOM goes through textContent only.
// The canvas's data-nodes / data-edges attributes say what is drawn (for tests and assistive status).
(function () {
  "use strict";
  var PALETTE = ["#0b5cad", "#1d6b35", "#8a5a00", "#6a3d9a", "#a4161a", "#00707a", "#5b6470"];
  var graphs = new WeakMap();

  function colourOf(type) {
    var h = 0;
    for (var i = 0; i < type.length; i++) { h = (h * 31 + type.charCodeAt(i)) % 997; }
    return PALETTE[h % PALETTE.length];
  }

  function elementsOf(data) {
    var out = [];
    data.nodes.forEach(function (n) {
      var classes = (n.center ? "center " : "") + (n.path ? "path" : "");
      out.push({ group: "nodes", data: { id: n.id, label: n.label, type: n.type, ref: n.ref, colour: colourOf(n.type) }, classes: classes.trim() });
    });
    data.edges.forEach(function (e) {
      out.push({ group: "edges", data: { id: "r" + e.id, source: e.source, target: e.target, label: e.label }, classes: e.path ? "path" : "" });
    });
    return out;
  }

  var STYLE = [
    { selector: "node", style: {
      "background-color": "data(colour)", "label": "data(label)", "color": "#1b1f24", "font-size": 12,
      "text-valign": "bottom", "text-margin-y": 4, "width": 22, "height": 22, "text-wrap": "ellipsis",
      "text-max-width": 140, "text-background-color": "#ffffff", "text-background-opacity": 0.8,
      "text-background-padding": 1 } },
    { selector: "node.center", style: { "width": 32, "height": 32, "border-width": 3, "border-color": "#12263f", "font-weight": "bold" } },
    { selector: "node:selected", style: { "border-width": 4, "border-color": "#f2b700" } },
    { selector: "edge", style: {
      "width": 1.5, "line-color": "#8a94a3", "target-arrow-color": "#8a94a3", "target-arrow-shape": "triangle",
      "curve-style": "bezier", "label": "data(label)", "font-size": 9, "color": "#4a5360",
      "text-rotation": "autorotate", "text-background-color": "#ffffff", "text-background-opacity": 0.8 } },
    { selector: "node.path", style: { "border-width": 4, "border-color": "#f2b700" } },
    { selector: "edge.path", style: { "width": 4, "line-color": "#f2b700", "target-arrow-color": "#c98f00", "z-index": 10 } }
  ];

  function status(canvas, cy, truncated) {
    canvas.setAttribute("data-nodes", String(cy.nodes().length));
    canvas.setAttribute("data-edges", String(cy.edges().length));
    var line = document.getElementById("graph-status");
    if (line) {
      line.textContent = cy.nodes().length + " entities, " + cy.edges().length + " relations drawn" +
        (truncated ? " (the entity cap cut the neighbourhood short)." : ".");
    }
  }

  function fetchJson(url) {
    return window.reverieFetch(url).then(function (r) {
      if (!r.ok) { throw new Error("The server answered " + r.status + "."); }
      return r.json();
    });
  }

  var LAYOUT = { name: "cose", animate: false, nodeDimensionsIncludeLabels: true, padding: 30 };

  function layout(cy) {
    cy.layout(Object.assign({}, LAYOUT, { randomize: false })).run();
  }

  function showPanel(canvas, ref) {
    var url = canvas.getAttribute("data-panel-url") + "?name=" + encodeURIComponent(ref);
    htmx.ajax("GET", url, { target: "#graph-panel", swap: "innerHTML" });
  }

  // Cytoscape adds a <style> element to <head> unless an element with this id exists; the CSP refuses inline
  // styles, so a placeholder stands in and console-graph.css holds the one rule it would have added.
  function markStylesheet() {
    var id = "__________cytoscape_stylesheet";
    if (document.getElementById(id)) { return; }
    var meta = document.createElement("meta");
    meta.id = id;
    meta.name = "cytoscape-stylesheet";
    meta.content = "console-graph.css";
    document.head.appendChild(meta);
  }

  function draw(canvas) {
    if (canvas.getAttribute("data-drawn")) { return; }
    markStylesheet();
    canvas.setAttribute("data-drawn", "pending");
    fetchJson(canvas.getAttribute("data-graph-url")).then(function (data) {
      if (!document.body.contains(canvas)) { return; }
      // maxZoom: a drawing of three nodes is not blown up to fill the canvas.
      var cy = cytoscape({ container: canvas, elements: elementsOf(data), style: STYLE, minZoom: 0.2, maxZoom: 1.7,
        layout: LAYOUT });
      graphs.set(canvas, cy);
      canvas.cy = cy;  // for the browser tests (a property, never an attribute: nothing is rendered from it)
      cy.on("tap", "node", function (event) {
        cy.nodes().unselect();
        event.target.select();
        showPanel(canvas, event.target.data("ref"));
      });
      status(canvas, cy, data.truncated);
      canvas.setAttribute("data-drawn", "done");
    }).catch(function (error) {
      canvas.setAttribute("data-drawn", "failed");
      var line = document.getElementById("graph-status");
      if (line) { line.textContent = "The drawing could not be loaded: " + error.message; }
    });
  }

  function expand(button) {
    var canvas = document.getElementById("graph-canvas");
    var cy = canvas && graphs.get(canvas);
    if (!cy) { return; }
    var ref = button.getAttribute("data-graph-expand");
    button.disabled = true;
    fetchJson(canvas.getAttribute("data-data-url") + "?depth=1&entity=" + encodeURIComponent(ref)).then(function (data) {
      var fresh = elementsOf(data).filter(function (el) { return cy.getElementById(el.data.id).empty(); });
      fresh.forEach(function (el) { el.classes = (el.classes || "").replace("center", "").trim(); });
      cy.add(fresh);
      layout(cy);
      status(canvas, cy, data.truncated);
      var line = document.getElementById("graph-status");
      if (line) { line.textContent += " Added " + fresh.filter(function (el) { return el.group === "nodes"; }).length + " entities."; }
    }).catch(function (error) {
      var line = document.getElementById("graph-status");
      if (line) { line.textContent = "Could not expand: " + error.message; }
    }).then(function () { button.disabled = false; });
  }

  // Before htmx swaps a drawing out: free Cytoscape and drop the canvas's id and style. htmx copies the
  // attributes of an old element onto the new one of the same id while settling, and a copied style
  // attribute (Cytoscape sets the container's style) is an inline style the CSP refuses.
  function release(event) {
    var target = event.detail && event.detail.target;
    if (!target || !target.querySelectorAll) { return; }
    target.querySelectorAll(".graph-canvas").forEach(function (canvas) {
      var cy = graphs.get(canvas);
      if (cy) { cy.destroy(); graphs.delete(canvas); canvas.cy = null; }
      canvas.removeAttribute("id");
      canvas.removeAttribute("style");
    });
    // The page's inputs also come back with an empty style attribute once something (the browser's form
    // filling, Cytoscape's focus handling) has touched their style; the same copy would be refused.
    target.querySelectorAll(".graph-forms [id][style], .graph-layout [id][style]").forEach(function (el) {
      el.removeAttribute("style");
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.body.addEventListener("htmx:beforeSwap", release);
    document.body.addEventListener("htmx:afterSettle", function () {
      document.querySelectorAll(".graph-canvas[data-graph-url]").forEach(draw);
    });
    document.addEventListener("click", function (event) {
      var button = event.target.closest && event.target.closest("[data-graph-expand]");
      if (button) { event.preventDefault(); expand(button); }
    });
  });
}());
