/* Draws every element with data-figure from the figures embedded in #figures-data. */
(function () {
  "use strict";
  var figures = JSON.parse(document.getElementById("figures-data").textContent);
  document.querySelectorAll("[data-figure]").forEach(function (el) {
    var fig = figures[el.getAttribute("data-figure")];
    if (!fig || typeof Plotly === "undefined") { el.textContent = "Chart unavailable."; return; }
    Plotly.newPlot(el, fig.data, fig.layout, { responsive: true, displaylogo: false }).then(function () {
      el.setAttribute("data-drawn", "true");
    });
  });
}());
