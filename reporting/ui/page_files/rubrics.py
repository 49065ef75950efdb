from reporting.ui.pages import rubrics_page

rubrics_page()
