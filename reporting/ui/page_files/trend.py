from reporting.ui.pages import trend_page

trend_page()
