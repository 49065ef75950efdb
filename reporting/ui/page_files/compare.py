from reporting.ui.pages import compare

compare()
