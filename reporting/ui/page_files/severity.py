from reporting.ui.pages import severity

severity()
