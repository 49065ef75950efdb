"""Drawing the report model: Plotly figure builders, presentation texts and the HTML export."""
